# LnQemuTests.cmake - AArch64 cross builds: every test runs under qemu once per CPU model.
#
# Included by tests/CMakeLists.txt after ln_test is defined and before any add_test; does
# nothing unless cross-compiling for AArch64 (CMAKE_CROSSCOMPILING_EMULATOR then runs the
# executables under qemu-aarch64). Each test added in tests/ becomes one ctest entry per
# configuration below, so a failure names the CPU model and vector length it happened on:
#
#   NAME              QEMU_CPU=neoverse-n1 (NEON, no SVE: SVE-only entries skip with 77)
#   NAME@sve128..2048 QEMU_CPU=max,sve-default-vector-length=16..256 (bytes!)
#   NAME@cap-neon     an SVE model with LN_MAX_ISA=neon: the cap must force NEON
#   NAME@cap-scalar   an SVE model with LN_MAX_ISA=scalar
#
# Per-ISA entries (NAME.isa from ln_isa_tests) get only the models that tell something
# new: NAME.sve the five vector lengths; scalar, neon and the x86 ones (visibly skipped)
# just the default model, like the suites in LN_QEMU_MODEL_FREE. LN_TEST_QUICK=1
# everywhere: emulation is 200-850x slower.
if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  return()
endif()

set(LN_QEMU_DEFAULT_ENV "QEMU_CPU=neoverse-n1;LN_TEST_QUICK=1;LN_TEST_EXPECT_ISA=neon;LN_TEST_MODEL_SVE=0")
set(LN_QEMU_CONFIGS sve128 sve256 sve512 sve1024 sve2048 cap-neon cap-scalar)
foreach(_bits 128 256 512 1024 2048)
  math(EXPR _bytes "${_bits} / 8")
  set(LN_QEMU_ENV_sve${_bits}
      "QEMU_CPU=max,sve-default-vector-length=${_bytes};LN_TEST_QUICK=1;LN_TEST_EXPECT_ISA=sve;LN_TEST_MODEL_SVE=1")
endforeach()
set(LN_QEMU_ENV_cap-neon
    "QEMU_CPU=max,sve-default-vector-length=32;LN_TEST_QUICK=1;LN_MAX_ISA=neon;LN_TEST_EXPECT_ISA=neon;LN_TEST_MODEL_SVE=1")
set(LN_QEMU_ENV_cap-scalar
    "QEMU_CPU=max,sve-default-vector-length=32;LN_TEST_QUICK=1;LN_MAX_ISA=scalar;LN_TEST_EXPECT_ISA=scalar;LN_TEST_MODEL_SVE=1")

# Suites that never reach the dispatcher or a SIMD kernel (the scalar oracle's own checks):
# the CPU model cannot change their outcome, so they run on the default model only.
set(LN_QEMU_MODEL_FREE reference)

# The configurations (beyond the default model) a test named `name` runs under.
function(ln_qemu_configs_of name out)
  if(name MATCHES "\\.sve$")
    set(${out} sve128 sve256 sve512 sve1024 sve2048 PARENT_SCOPE)
  elseif(name MATCHES "\\.(scalar|neon|avx2|avx512)$" OR name IN_LIST LN_QEMU_MODEL_FREE)
    set(${out} "" PARENT_SCOPE)
  else()
    set(${out} ${LN_QEMU_CONFIGS} PARENT_SCOPE)
  endif()
endfunction()

# add_test, wrapped: the test as asked for, plus one copy per configuration. Only tests of
# this directory whose command is a built executable (which the emulator runs) are copied.
set(LN_QEMU_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR})
function(add_test)
  _add_test(${ARGN})
  list(FIND ARGN NAME _at)
  if(_at LESS 0 OR NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL LN_QEMU_TEST_DIR)
    return()
  endif()
  math(EXPR _nat "${_at} + 1")
  list(GET ARGN ${_nat} _name)
  list(FIND ARGN COMMAND _ct)
  math(EXPR _ct "${_ct} + 1")
  list(GET ARGN ${_ct} _exe)
  if(NOT TARGET ${_exe})
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY LN_QEMU_TESTS ${_name})
  ln_qemu_configs_of(${_name} _cfgs)
  foreach(_cfg ${_cfgs})
    set(_args ${ARGN})
    list(REMOVE_AT _args ${_nat})
    list(INSERT _args ${_nat} ${_name}@${_cfg})
    _add_test(${_args})
  endforeach()
endfunction()

# Runs once the directory is done, so the copies also get every property the suites set
# on the original after add_test (skip code, labels, environment, ...), plus their model.
function(ln_qemu_finish)
  get_property(_tests GLOBAL PROPERTY LN_QEMU_TESTS)
  foreach(_name ${_tests})
    ln_qemu_configs_of(${_name} _cfgs)
    get_test_property(${_name} ENVIRONMENT _own)
    get_test_property(${_name} LABELS _labels)
    if(_own STREQUAL "NOTFOUND")
      set(_own "")
    endif()
    if(_labels STREQUAL "NOTFOUND")
      set(_labels "")
    endif()
    foreach(_cfg "" ${_cfgs})
      if(_cfg STREQUAL "")
        set(_test ${_name})
        set(_env ${LN_QEMU_DEFAULT_ENV})
        set(_label qemu-n1)
      else()
        set(_test ${_name}@${_cfg})
        set(_env ${LN_QEMU_ENV_${_cfg}})
        set(_label qemu-${_cfg})
        foreach(_prop SKIP_RETURN_CODE TIMEOUT WILL_FAIL PASS_REGULAR_EXPRESSION
                      FAIL_REGULAR_EXPRESSION SKIP_REGULAR_EXPRESSION RUN_SERIAL)
          get_test_property(${_name} ${_prop} _v)
          if(NOT _v STREQUAL "NOTFOUND")
            set_tests_properties(${_test} PROPERTIES ${_prop} "${_v}")
          endif()
        endforeach()
      endif()
      # The model goes first: a suite's own setting of the same variable still wins.
      set_tests_properties(${_test} PROPERTIES ENVIRONMENT "${_env};${_own}"
                           LABELS "${_labels};${_label}")
    endforeach()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL ln_qemu_finish)

# The dispatcher picks what each model implies: NEON without SVE, SVE with it, the cap
# forces NEON or scalar (LN_TEST_EXPECT_ISA and LN_TEST_MODEL_SVE, set per configuration).
ln_test(test_arm_isa layernorm)
add_test(NAME arm_isa COMMAND test_arm_isa)
set_tests_properties(arm_isa PROPERTIES SKIP_RETURN_CODE 77)
