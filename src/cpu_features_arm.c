/* cpu_features_arm.c - which AArch64 ISAs the kernel reports (HWCAP), never SIGILL probes. */
#include "ln_internal.h"

#include <stdio.h>
#include <stdlib.h>
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

#ifndef HWCAP2_SVEBF16
#define HWCAP2_SVEBF16 (1UL << 12)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif

/* FEAT_BF16 conversions (BFCVTN, and BFCVT for SVE), each on top of its ISA. */
unsigned ln_cpu_ext_mask(void)
{
    const unsigned isa = ln_cpu_isa_mask();
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    unsigned mask = 0;
    if ((isa & (1u << LN_ISA_NEON)) && (hw2 & HWCAP2_BF16))
        mask |= LN_CPUX_NEON_BF16;
    if ((isa & (1u << LN_ISA_SVE)) && (hw2 & HWCAP2_SVEBF16))
        mask |= LN_CPUX_SVE_BF16;
    return mask;
}

/* Bytes of the last-level cache from sysfs (AArch64 has no unprivileged CPUID for it);
   0 when the kernel does not say. Read once, by dispatch.c. */
size_t ln_cpu_llc_bytes(void)
{
    size_t best = 0;
    unsigned best_level = 0;
    for (unsigned i = 0; i < 8; i++) {
        char path[80], buf[32];
        unsigned level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        const int ok = fscanf(f, "%u", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
        f = ok ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f)) {
            char *end;
            size_t v = strtoul(buf, &end, 10);
            v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 0;
            if (level >= best_level) {
                best_level = level;
                best = v;
            }
        }
        fclose(f);
    }
    return best;
}

/* prfm pldl1strm is not the x86 hint dispatch.c measured: Arm keeps the L2 hints, and the
   8 KiB row bound (unmeasured here with 16). */
unsigned ln_cpu_nt_hints(void) { return 0; }
