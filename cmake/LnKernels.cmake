# LnKernels.cmake - the sources for the target architecture; each kernel file gets its
# own ISA flags (and only it), so nothing else can emit instructions the CPU may lack.
include(CheckCSourceCompiles)

option(LN_EMULATE_AVX512 "Test builds only: run the AVX-512 kernel on any x86-64 CPU" OFF)
set(LN_EMULATED_AVX512 0)
set(LN_SOURCES src/api.c src/dispatch.c src/run.c src/scalar.c src/validate.c)
foreach(_isa AVX2 AVX512 NEON SVE)
  set(LN_HAVE_${_isa} 0)
endforeach()

# ln_add_kernel(ISA FILE FLAGS...): compile FILE with FLAGS when the compiler takes them.
# -fno-lto: link-time optimization could otherwise inline ISA code into baseline callers.
function(ln_add_kernel isa file)
  set(_flags ${ARGN})
  string(REPLACE ";" " " _joined "${_flags}")
  set(CMAKE_REQUIRED_FLAGS "${_joined}")
  check_c_source_compiles("int main(void) { return 0; }" LN_CC_TAKES_${isa})
  if(LN_CC_TAKES_${isa})
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${_flags};-fno-lto;-fno-math-errno")
    set(LN_SOURCES ${LN_SOURCES} ${file} PARENT_SCOPE)
    set(LN_HAVE_${isa} 1 PARENT_SCOPE)
  else()
    message(STATUS "liblayernorm: compiler lacks ${_joined}; ${isa} kernel left out")
  endif()
endfunction()

# ln_schedule_early(FILE...): GCC's instruction scheduling before register allocation,
# which it leaves off on x86, on files whose loops hold independent dependency chains;
# weighing register pressure (GELU erf backward, AVX-512: 0.82x the time of scheduling
# without it, which spilled). Only the order of instructions changes, never an
# operation: the same bits (scripts/digest.sh). Tried on the LayerNorm kernels (f32 and
# bf16): 0.96-1.06x, no gain, as their rows and accumulators are interleaved in source.
function(ln_schedule_early)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_OPTIONS -fschedule-insns -fsched-pressure)
  endif()
endfunction()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  list(APPEND LN_SOURCES src/cpu_features_x86.c)
  ln_add_kernel(AVX2 src/x86/avx2.c -mavx2 -mfma)
  if(LN_EMULATE_AVX512)
    # Test builds only: the real kernel source over scalar stand-ins for its intrinsics
    # (tests/emu/immintrin.h), reported available on any x86-64 CPU. -O0: optimizing the
    # stand-ins' lane loops, inlined into every kernel variant, took GCC minutes per file
    # (a tenth of the CI run); unoptimized, the file compiles in seconds, and its
    # arithmetic is the same (ISO C, no contraction).
    set(LN_EMU_OPTIONS "-I${PROJECT_SOURCE_DIR}/tests/emu;-fno-lto;-O0")
    set_source_files_properties(src/x86/avx512.c PROPERTIES COMPILE_OPTIONS "${LN_EMU_OPTIONS}")
    list(APPEND LN_SOURCES src/x86/avx512.c)
    set(LN_HAVE_AVX512 1)
    set(LN_EMULATED_AVX512 1)
  else()
    ln_add_kernel(AVX512 src/x86/avx512.c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma)
  endif()
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  list(APPEND LN_SOURCES src/cpu_features_arm.c)
  # Advanced SIMD is the AArch64 baseline: no flag. SVE gets its own; the kernel is
  # vector-length agnostic, so one build serves 128- to 2048-bit implementations.
  ln_add_kernel(NEON src/arm/neon.c)
  ln_add_kernel(SVE src/arm/sve.c -march=armv8.2-a+sve)
else()
  list(APPEND LN_SOURCES src/cpu_features_none.c)
endif()

# bf16 LayerNorm and GELU: a file group per ISA, registered like the f32 kernels but
# under BF16_GELU_<ISA> (dispatch.c puts the scalar ones in a record whose group is
# missing). GELU's exp and erfcx are inline (src/kernels/gelu_math.h): the library needs
# no SLEEF; the GELU tests take it as their independent reference (tests/CMakeLists.txt).
list(APPEND LN_SOURCES src/api_bf16.c src/api_gelu.c src/scalar_bf16.c src/scalar_gelu.c)
foreach(_isa AVX2 AVX512 NEON SVE)
  set(LN_HAVE_BF16_GELU_${_isa} 0)
endforeach()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  ln_add_kernel(BF16_GELU_AVX2 "src/x86/avx2_bf16.c;src/x86/avx2_bf16nf.c;src/x86/gelu_avx2.c" -mavx2 -mfma)
  set(_avx512_group src/x86/avx512_bf16.c src/x86/avx512_bf16nf.c src/x86/avx512bf16.c
    src/x86/gelu_avx512.c)
  if(LN_EMULATE_AVX512)
    # As avx512.c above: bf16 (both roundings) and GELU over the stand-ins.
    set_source_files_properties(${_avx512_group} PROPERTIES COMPILE_OPTIONS "${LN_EMU_OPTIONS}")
    list(APPEND LN_SOURCES ${_avx512_group})
    set(LN_HAVE_BF16_GELU_AVX512 1)
  else()
    ln_add_kernel(BF16_GELU_AVX512 "${_avx512_group}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma)
  endif()
  # GELU's loops compute LN_GELU_NV vectors, each a chain of 50-80 dependent operations,
  # then store them. GCC schedules before register allocation on x86 only when asked; else
  # it emits the chains one after another and the core's window overlaps about two of them.
  ln_schedule_early(src/x86/gelu_avx2.c src/x86/gelu_avx512.c)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  ln_add_kernel(BF16_GELU_NEON "src/arm/neon_bf16.c;src/arm/neon_bf16cvt.c;src/arm/gelu_neon.c")
  ln_add_kernel(BF16_GELU_SVE "src/arm/sve_bf16.c;src/arm/gelu_sve.c" -march=armv8.2-a+sve)
endif()
