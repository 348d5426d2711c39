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

/* No Arm extension is used yet: the bf16 kernels round with integer shifts (see
   README, "bf16 and GELU"); FEAT_BF16 (HWCAP2_BF16) would be detected here. */
unsigned ln_cpu_ext_mask(void) { return 0; }
