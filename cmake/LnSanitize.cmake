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
