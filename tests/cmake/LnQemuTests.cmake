# LnQemuTests.cmake - AArch64 cross builds: every test runs under qemu once per CPU model.
#
# Included by tests/CMakeLists.txt before any add_test; does nothing unless cross-compiling
# for AArch64 (CMAKE_CROSSCOMPILING_EMULATOR then runs the test executables under
# qemu-aarch64). Each test of tests/ becomes one ctest entry per configuration, so a
# failure names the CPU model and vector length it happened on:
#
#   NAME              QEMU_CPU=neoverse-n1: NEON without SVE (SVE entries skip with 77)
#   NAME@sve128..2048 QEMU_CPU=max,sve-default-vector-length=16..256 (bytes!)
#   NAME@cap-neon     an SVE model with LN_MAX_ISA=neon: the cap must force NEON
#   NAME@cap-scalar   an SVE model with LN_MAX_ISA=scalar
#
# LN_EXPECT_ISA and LN_EXPECT_AVAILABLE tell test_dispatch what each model must give, so
# it proves that detection finds NEON without SVE and SVE with it, and that the cap
# forces NEON and scalar. Per-ISA entries (NAME.isa) get only the models that can change
# their outcome: NAME.sve the five vector lengths, the others the default model, like
# the suites in LN_QEMU_MODEL_FREE. Guard-page suites run too: SVE's predicated loads do
# not fault on inactive lanes. LN_TEST_QUICK=1 everywhere (emulation is 200-850x slower)
# except the NAME.full.isa entries, which set LN_TEST_QUICK=0 themselves.
if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  return()
endif()

set(LN_QEMU_SVE_MODEL "QEMU_CPU=max,sve-default-vector-length")
set(LN_QEMU_ENV_n1 "QEMU_CPU=neoverse-n1;LN_TEST_QUICK=1;LN_EXPECT_ISA=neon"
                   "LN_EXPECT_AVAILABLE=scalar,neon")
foreach(_bits 128 256 512 1024 2048)
  math(EXPR _bytes "${_bits} / 8")
  set(LN_QEMU_ENV_sve${_bits} "${LN_QEMU_SVE_MODEL}=${_bytes};LN_TEST_QUICK=1"
                              "LN_EXPECT_ISA=sve;LN_EXPECT_AVAILABLE=scalar,neon,sve")
endforeach()
foreach(_cap neon scalar)
  set(LN_QEMU_ENV_cap-${_cap} "${LN_QEMU_SVE_MODEL}=32;LN_TEST_QUICK=1;LN_MAX_ISA=${_cap}"
                              "LN_EXPECT_ISA=${_cap};LN_EXPECT_AVAILABLE=scalar,neon,sve")
endforeach()

# Suites that never reach the dispatcher or a SIMD kernel: the model cannot change them.
set(LN_QEMU_MODEL_FREE reference)

# The configurations of test `name`; `env` is the test's own ENVIRONMENT. A test that
# sets LN_MAX_ISA itself decides its expectations itself and needs two models, not seven.
function(ln_qemu_configs_of name env out)
  set(_sve sve128 sve256 sve512 sve1024 sve2048)
  if(name MATCHES "\\.full\\.sve$")
    set(_cfgs n1 sve128 sve2048) # a full run is slow: the narrowest and the widest
  elseif(name MATCHES "\\.sve$")
    set(_cfgs n1 ${_sve})
  elseif(name MATCHES "\\.(scalar|neon|avx2|avx512)$" OR name IN_LIST LN_QEMU_MODEL_FREE)
    set(_cfgs n1)
  elseif(env MATCHES "LN_MAX_ISA=")
    set(_cfgs n1 sve256) # its cap against a model without SVE and one with it
  else()
    set(_cfgs n1 ${_sve} cap-neon cap-scalar)
  endif()
  set(${out} ${_cfgs} PARENT_SCOPE)
endfunction()

# add_test, wrapped: the test as asked for, and its arguments kept for the copies that
# ln_qemu_finish makes. Only tests of this directory whose command is a built executable
# (which the emulator runs) get copies.
set(LN_QEMU_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR})
function(add_test)
  _add_test(${ARGN})
  list(FIND ARGN NAME _at)
  list(FIND ARGN COMMAND _ct)
  if(_at LESS 0 OR _ct LESS 0 OR NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL LN_QEMU_TEST_DIR)
    return()
  endif()
  math(EXPR _at "${_at} + 1")
  math(EXPR _ct "${_ct} + 1")
  list(GET ARGN ${_at} _name)
  list(GET ARGN ${_ct} _exe)
  if(TARGET ${_exe})
    set_property(GLOBAL APPEND PROPERTY LN_QEMU_TESTS ${_name})
    set_property(GLOBAL PROPERTY LN_QEMU_ARGS_${_name} "${ARGN}")
    set_property(GLOBAL PROPERTY LN_QEMU_NAMEAT_${_name} ${_at})
  endif()
endfunction()

# Runs once the directory is done, when every test has its properties: makes the copies,
# gives them the original's properties, and puts each entry on its model. The model's
# variables go first in ENVIRONMENT, so a test's own setting of one still wins.
function(ln_qemu_finish)
  get_property(_tests GLOBAL PROPERTY LN_QEMU_TESTS)
  foreach(_name ${_tests})
    get_property(_args GLOBAL PROPERTY LN_QEMU_ARGS_${_name})
    get_property(_at GLOBAL PROPERTY LN_QEMU_NAMEAT_${_name})
    get_test_property(${_name} ENVIRONMENT _own)
    get_test_property(${_name} LABELS _labels)
    foreach(_v _own _labels)
      if(${_v} STREQUAL "NOTFOUND")
        set(${_v} "")
      endif()
    endforeach()
    ln_qemu_configs_of(${_name} "${_own}" _cfgs)
    foreach(_cfg ${_cfgs})
      set(_env ${LN_QEMU_ENV_${_cfg}})
      if(_own MATCHES "LN_MAX_ISA=")
        list(FILTER _env EXCLUDE REGEX "^LN_EXPECT_ISA=")
      endif()
      set(_test ${_name})
      if(NOT _cfg STREQUAL "n1")
        set(_test ${_name}@${_cfg})
        set(_copy ${_args})
        list(REMOVE_AT _copy ${_at})
        list(INSERT _copy ${_at} ${_test})
        _add_test(${_copy})
        foreach(_prop SKIP_RETURN_CODE TIMEOUT WILL_FAIL PASS_REGULAR_EXPRESSION
                      FAIL_REGULAR_EXPRESSION SKIP_REGULAR_EXPRESSION RUN_SERIAL)
          get_test_property(${_name} ${_prop} _val)
          if(NOT _val STREQUAL "NOTFOUND")
            set_tests_properties(${_test} PROPERTIES ${_prop} "${_val}")
          endif()
        endforeach()
      endif()
      set_tests_properties(${_test} PROPERTIES ENVIRONMENT "${_env};${_own}"
                           LABELS "${_labels};qemu-${_cfg}")
    endforeach()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL ln_qemu_finish)
