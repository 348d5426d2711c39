# LnVersion.cmake - the version comes from include/layernorm.h, its single source.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../include/layernorm.h" _ln_ver
     REGEX "^#define LN_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "LN_VERSION_${_part} ([0-9]+)" _m "${_ln_ver}")
  if(NOT _m)
    message(FATAL_ERROR "LN_VERSION_${_part} not found in layernorm.h")
  endif()
  set(LN_VERSION_${_part} "${CMAKE_MATCH_1}")
endforeach()
set(LN_VERSION "${LN_VERSION_MAJOR}.${LN_VERSION_MINOR}.${LN_VERSION_PATCH}")
