# LnThreads.cmake - OpenMP for src/threads.c only: no other file may gain parallel regions.
find_package(OpenMP REQUIRED COMPONENTS C)
list(APPEND LN_SOURCES src/threads.c)
separate_arguments(_ln_omp_flags UNIX_COMMAND "${OpenMP_C_FLAGS}")
set_source_files_properties(src/threads.c PROPERTIES COMPILE_OPTIONS "${_ln_omp_flags}")
