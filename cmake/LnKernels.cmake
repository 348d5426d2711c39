# LnKernels.cmake - the sources for the target architecture; each kernel file gets its
# own ISA flags (and only it), so nothing else can emit instructions the CPU may lack.
include(CheckCSourceCompiles)

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
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${_flags};-fno-lto")
    set(LN_SOURCES ${LN_SOURCES} ${file} PARENT_SCOPE)
    set(LN_HAVE_${isa} 1 PARENT_SCOPE)
  else()
    message(STATUS "liblayernorm: compiler lacks ${_joined}; ${isa} kernel left out")
  endif()
endfunction()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  list(APPEND LN_SOURCES src/cpu_features_x86.c)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  list(APPEND LN_SOURCES src/cpu_features_arm.c)
else()
  list(APPEND LN_SOURCES src/cpu_features_none.c)
endif()
