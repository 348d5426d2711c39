#!/usr/bin/env bash
# 60-package.sh - liblayernorm as users get it: install to a prefix (then moved, to prove
# relocation), the ABI gate, the C++ consumer through find_package and pkg-config, the
# Python package pip-installed into a venv and its tests (torch included when installed)
# run on that installed copy, and the Rust crate's cargo test.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$LN_ROOT/scripts/abi-lib.sh"

passed=0 failed=0 skipped=0
# step NAME CMD...: one counted check; its output goes to $LN_OUT/pkg-NAME.log.
step() {
  local name=$1 log=$LN_OUT/pkg-$1.log; shift
  if "$@" > "$log" 2>&1; then
    passed=$((passed + 1)); echo "ok     $name"; grep -hE '^(abi:|liblayernorm )' "$log" || true
  else
    failed=$((failed + 1)); echo "FAILED $name"; tail -n 30 "$log"
  fi
}
finish() { ln_record package "$passed" "$failed" "$skipped"; [ "$failed" = 0 ]; exit $?; }

build=$LN_OUT/build-pkg
if ! ln_abi_build "$build"; then failed=1; finish; fi
lib=$build/liblayernorm.so
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
prefix=$LN_OUT/prefix staging=$LN_OUT/prefix-staging

install_and_move() {
  rm -rf "$staging" "$prefix"
  cmake --install "$build" --prefix "$staging" && mv "$staging" "$prefix" || return 1
  local f
  for f in include/layernorm.h "$libdir/liblayernorm.so.1" "$libdir/liblayernorm.so" \
    "$libdir/cmake/layernorm/layernormConfig.cmake" \
    "$libdir/cmake/layernorm/layernormConfigVersion.cmake" "$libdir/pkgconfig/layernorm.pc"; do
    [ -e "$prefix/$f" ] || { echo "missing $f"; return 1; }
  done
  ls -l "$prefix/$libdir"/liblayernorm.so*
  [ -L "$prefix/$libdir/liblayernorm.so" ] && [ -L "$prefix/$libdir/liblayernorm.so.1" ] &&
    [ -f "$(echo "$prefix/$libdir"/liblayernorm.so.1.*.*)" ] || { echo "bad .so chain"; return 1; }
  # Relocatable: nothing installed may name the directory it was installed to.
  ! grep -rl "$staging" "$prefix" || { echo "absolute install paths above"; return 1; }
}
step install-relocated install_and_move
step abi-symbols ln_abi_symbols "$lib"
step abi-diff ln_abi_diff "$lib"
step abi-constants ln_abi_constants_check

cpp_cmake() {
  cmake -S "$LN_ROOT/examples/cpp" -B "$LN_OUT/cpp-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" && cmake --build "$LN_OUT/cpp-cmake" &&
    "$LN_OUT/cpp-cmake/consumer"
}
cpp_pkgconfig() {
  mkdir -p "$LN_OUT/cpp-pc" &&
    PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" make -C "$LN_ROOT/examples/cpp" \
      OUT="$LN_OUT/cpp-pc" CXXFLAGS="-O2 -Wall -Wextra -Werror" && "$LN_OUT/cpp-pc/consumer-pc"
}
version_refused() {
  ! cmake -S "$LN_ROOT/examples/cpp" -B "$LN_OUT/cpp-v2" -DCMAKE_PREFIX_PATH="$prefix" \
    -DLN_WANT_VERSION=2.0
}
step cpp-find-package cpp_cmake
step cpp-pkg-config cpp_pkgconfig
step cmake-refuses-major-2 version_refused
[ "$failed" = 0 ] || finish  # the language tests below need a sound library

# Python: the package as a user installs it, pip into a fresh venv (Debian's setuptools,
# nothing from an index), from a copy of python/ so no build/ or egg-info lands in the tree.
venv=$LN_OUT/venv pysrc=$LN_OUT/python-src py=$LN_OUT/venv/bin/python
pip_install() {
  rm -rf "$venv" "$pysrc" && cp -r "$LN_ROOT/python" "$pysrc" &&
    rm -rf "$pysrc/tests" "$pysrc/build" "$pysrc"/*.egg-info &&
    /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    "$venv/bin/pip" install --no-build-isolation --no-index "$pysrc"
}
# In the venv, run from outside the source tree: the installed copy is the one imported.
vpy() { (cd "$LN_OUT" && env -u LAYERNORM_LIBRARY PYTHONDONTWRITEBYTECODE=1 "$@"); }
version_single_source() {
  local header
  header=$(sed -n 's/^#define LN_VERSION_STRING "\(.*\)"$/\1/p' "$LN_ROOT/include/layernorm.h")
  vpy env LAYERNORM_LIBRARY="$lib" "$py" - "$header" <<'PY'
import importlib.metadata, sys, layernorm
got = (importlib.metadata.version("layernorm"), layernorm.__version__, sys.argv[1])
print("versions (installed, __version__, header):", got)
assert len(set(got)) == 1 and "site-packages" in layernorm.__file__
PY
}
# loaded_from DIR PATH [VAR=VALUE...]: the installed package, imported with only the given
# environment (no LAYERNORM_LIBRARY), reports library_path PATH and has mapped a library
# that lies under DIR.
loaded_from() {
  local dir=$1 path=$2; shift 2
  vpy env "$@" "$py" - "$dir" "$path" <<'PY'
import sys, layernorm
maps = [l.split()[-1] for l in open("/proc/self/maps") if "liblayernorm.so" in l]
print("library_path", layernorm.library_path, "mapped", maps)
assert layernorm.library_path == sys.argv[2] and maps[0].startswith(sys.argv[1] + "/")
PY
}
# After `cmake --install` to a prefix on the loader's path: found by its SONAME.
found_by_soname() {
  loaded_from "$prefix" liblayernorm.so.1 LD_LIBRARY_PATH="$prefix/$libdir"
}
# After `cmake --install build --prefix $VIRTUAL_ENV`: found in the venv's lib directory.
found_in_venv() {
  cmake --install "$build" --prefix "$venv" > /dev/null &&
    loaded_from "$venv" "$venv/$libdir/liblayernorm.so.1"
}
step python-pip-install pip_install
step python-version version_single_source
step python-finds-soname found_by_soname
step python-finds-venv-lib found_in_venv

# pytest's own counts (each ISA a test, absent ones skipped with the reason; torch's tests
# skipped by name when torch is not installed) on the installed package and library.
if [ -x "$py" ]; then
  vpy env LAYERNORM_TEST_INSTALLED=1 LAYERNORM_LIBRARY="$prefix/$libdir/liblayernorm.so.1" \
    "$py" -m pytest "$LN_ROOT/python/tests" -q --junitxml="$LN_OUT/pytest.xml" \
    > "$LN_OUT/pytest.log" 2>&1
else
  echo "no venv: pytest not run" > "$LN_OUT/pytest.log"
fi
tail -n 1 "$LN_OUT/pytest.log"
[ -x "$py" ] && { "$py" -c 'import torch' 2> /dev/null ||
  echo "torch not installed: the layernorm.torch tests are SKIPPED"; }
read -r p f s < <(/usr/bin/python3 - "$LN_OUT/pytest.xml" <<'PY' || echo "0 1 0"
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
t, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(t - f - e - k, f + e, k)
PY
)
passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
[ "$f" = 0 ] || grep -E '^(FAILED|ERROR)' "$LN_OUT/pytest.log" | head -n 20

# Rust: cargo test's counts; each ISA the machine lacks is one visible skip line.
if command -v cargo > /dev/null; then
  LAYERNORM_LIB_DIR=$build CARGO_TARGET_DIR=$LN_OUT/cargo cargo test --offline \
    --manifest-path "$LN_ROOT/examples/rust/Cargo.toml" -- --show-output > "$LN_OUT/cargo.log" 2>&1
  rc=$?
  read -r p f < <(awk '/^test result:/ { p += $4; f += $6 } END { print p + 0, f + 0 }' "$LN_OUT/cargo.log")
  s=$(grep -c 'SKIPPED' "$LN_OUT/cargo.log" || true)
  [ $rc = 0 ] || f=$((f + 1))
  echo "cargo test: $p passed, $f failed, $s ISA runs skipped"
  [ $rc = 0 ] || tail -n 30 "$LN_OUT/cargo.log"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
else
  echo "cargo not found: the Rust example is SKIPPED"; skipped=$((skipped + 1))
fi
finish
