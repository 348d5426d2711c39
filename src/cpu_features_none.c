/* cpu_features_none.c - other architectures: the scalar kernel only. */
#include "ln_internal.h"

unsigned ln_cpu_isa_mask(void) { return 1u << LN_ISA_SCALAR; }

unsigned ln_cpu_ext_mask(void) { return 0; }

size_t ln_cpu_llc_bytes(void) { return 0; }

unsigned ln_cpu_nt_hints(void) { return 0; }
