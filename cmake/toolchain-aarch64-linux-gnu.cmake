# toolchain-aarch64-linux-gnu.cmake - cross-build for AArch64 Linux with Debian's cross gcc;
# ctest runs every test through qemu-aarch64 (pick the CPU model with QEMU_CPU).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The arm64 multiarch packages (libc6:arm64, libcmocka-dev:arm64, ...) live in
# /usr/lib/aarch64-linux-gnu, which the cross gcc searches already. No -L
# /usr/aarch64-linux-gnu, here or for qemu: it would mix the cross libc with the
# multiarch one. qemu then finds the arm64 loader at its real path, /lib.
find_program(LN_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${LN_QEMU_AARCH64})

# pkg-config must read the arm64 .pc files only, never the host's: Debian's
# aarch64-linux-gnu-pkg-config does that; the environment covers a bare pkg-config.
find_program(PKG_CONFIG_EXECUTABLE NAMES aarch64-linux-gnu-pkg-config pkg-config)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
