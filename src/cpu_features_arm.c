/* cpu_features_arm.c - which AArch64 ISAs the kernel reports (HWCAP), never SIGILL probes. */
#include "ln_internal.h"

#include <sys/auxv.h>

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)
#endif

unsigned ln_cpu_isa_mask(void)
{
    const unsigned long hw = getauxval(AT_HWCAP);
    unsigned mask = 1u << LN_ISA_SCALAR;
    if (hw & HWCAP_ASIMD)
        mask |= 1u << LN_ISA_NEON;
    if ((hw & HWCAP_ASIMD) && (hw & HWCAP_SVE))
        mask |= 1u << LN_ISA_SVE;
    return mask;
}
