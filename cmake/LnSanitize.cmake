# LnSanitize.cmake - sanitizer and libFuzzer builds for the hardening suites.
# LN_SANITIZE is a -fsanitize list ("address,undefined", "thread"); it applies to every
# target, library included, and every finding aborts (-fno-sanitize-recover) so that a
# report can never scroll past as a pass. LN_FUZZ builds tests/fuzz as a libFuzzer
# binary (clang only); without it the same target is a plain test over its corpus.
set(LN_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined")
option(LN_FUZZ "Build the libFuzzer target (clang; implies fuzzer-no-link everywhere)" OFF)

if(LN_SANITIZE)
  add_compile_options(-fsanitize=${LN_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${LN_SANITIZE})
  if(LN_SANITIZE MATCHES "address")
    # Every shadow check out of line (a call to __asan_loadN/storeN) instead of inlined:
    # the same accesses are checked, but the kernels' unrolled bodies stop growing 15x
    # in code: the AVX-512 backward body alone compiled (ASan + UBSan) in 58 s instead of
    # 270 s with clang-14, 62 s instead of 133 s with gcc-12. The tests under ASan run
    # for seconds; the build was most of the two clang suites' 40 minutes.
    add_compile_options(
      "$<$<COMPILE_LANG_AND_ID:C,Clang>:SHELL:-mllvm -asan-instrumentation-with-call-threshold=0>"
      "$<$<COMPILE_LANG_AND_ID:C,GNU>:--param=asan-instrumentation-with-call-threshold=0>")
  endif()
  if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND LN_SANITIZE MATCHES "undefined")
    # clang-14's inliner stalls on a pointer-overflow check per unrolled vector address:
    # the AVX-512 forward body alone compiled in 97 s under UBSan, 26 s without this one
    # check; with out-of-line ASan too, 285 s against 24 s. gcc's UBSan (20-asan-gcc.sh) keeps it over the same sources at
    # no such cost, so no line of the library goes unchecked for wrapping pointers.
    add_compile_options(-fno-sanitize=pointer-overflow)
  endif()
  if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND LN_SANITIZE MATCHES "address" AND NOT LN_FUZZ)
    # clang links its runtime statically into executables only, which leaves the shared
    # library (-Wl,--no-undefined) with unresolved __asan_*: use the shared runtime.
    # (libFuzzer wants the static one first; clang's shared TSan runtime crashes here.)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE _ln_rtdir OUTPUT_STRIP_TRAILING_WHITESPACE)
    add_link_options(-shared-libsan -Wl,-rpath,${_ln_rtdir})
  endif()
endif()
if(LN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LN_FUZZ needs clang (libFuzzer)")
  endif()
  # Edge coverage in the library too: the fuzzer steers by the kernels' branches. No
  # comparison tracing: here it only traces loop bounds, and cost 5x the executions.
  add_compile_options(-fsanitize=fuzzer-no-link -fno-sanitize-coverage=trace-cmp)
endif()
