/* cpu_features_x86.c - which x86 ISAs the CPU has *and* the OS saves the state of. */
#include "ln_internal.h"

#include <cpuid.h>

/* Inline asm rather than _xgetbv(): the intrinsic needs -mxsave, and this file must
   stay baseline. */
static unsigned long long read_xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

unsigned ln_cpu_isa_mask(void)
{
    unsigned a, b, c, d;
    unsigned mask = 1u << LN_ISA_SCALAR;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return mask;
    /* Without OSXSAVE, xgetbv itself faults; without the XCR0 bits the OS would not
       preserve the YMM/ZMM registers across context switches. */
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx)
        return mask;
    const unsigned long long xcr0 = read_xcr0();
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return mask;
    const int avx2 = (b >> 5) & 1;
    const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    if (avx2 && fma && (xcr0 & 0x6) == 0x6)
        mask |= 1u << LN_ISA_AVX2;
    if ((mask & (1u << LN_ISA_AVX2)) && f && dq && bw && vl && (xcr0 & 0xE6) == 0xE6)
        mask |= 1u << LN_ISA_AVX512;
    if (LN_EMULATED_AVX512) /* its intrinsics are plain C: it runs on any CPU */
        mask |= 1u << LN_ISA_AVX512;
    return mask;
}

/* AVX512_BF16 (vcvtne2ps2bf16) counts only on top of usable AVX-512: it uses ZMM state. */
unsigned ln_cpu_ext_mask(void)
{
    unsigned a, b, c, d;
    if (LN_EMULATED_AVX512) /* the emulation has the BF16 conversion too */
        return LN_CPUX_AVX512_BF16;
    if (!(ln_cpu_isa_mask() & (1u << LN_ISA_AVX512)) || !__get_cpuid_count(7, 0, &a, &b, &c, &d)
        || a < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return 0;
    return (a >> 5) & 1u ? LN_CPUX_AVX512_BF16 : 0;
}
