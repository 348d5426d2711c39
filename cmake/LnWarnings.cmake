# LnWarnings.cmake - the house warning set (DESIGN.md rule 9) as an interface target.
option(LN_WERROR "Treat warnings as errors (CI turns this on)" OFF)
add_library(ln_warnings INTERFACE)
target_compile_options(ln_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wvla
  $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes -Wmissing-prototypes>
  $<$<BOOL:${LN_WERROR}>:-Werror>)
