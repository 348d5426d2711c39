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
    return mask;
}

/* AVX512_BF16 (vcvtne2ps2bf16) counts only on top of usable AVX-512: it uses ZMM state. */
unsigned ln_cpu_ext_mask(void)
{
    unsigned a, b, c, d;
    if (!(ln_cpu_isa_mask() & (1u << LN_ISA_AVX512)) || !__get_cpuid_count(7, 0, &a, &b, &c, &d)
        || a < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return 0;
    return (a >> 5) & 1u ? LN_CPUX_AVX512_BF16 : 0;
}

/* Extended leaf 0x80000006: L3 in 512 KiB units (EDX[31:18], AMD), else L2 in KiB
   (ECX[31:16]). Hypervisors often hide the deterministic leaves but keep this one. */
static size_t legacy_llc_bytes(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000006u)
        return 0;
    __cpuid(0x80000006u, a, b, c, d);
    if (d >> 18)
        return (size_t)(d >> 18) << 19;
    return (size_t)(c >> 16) << 10;
}

/*
 * Bytes of the last-level cache (0 if CPUID does not say): deterministic cache
 * parameters, leaf 4 on Intel, 0x8000001D on AMD, same layout. The largest level wins;
 * a size shared by several cores is still the size a stream of stores competes for.
 */
size_t ln_cpu_llc_bytes(void)
{
    unsigned a, b, c, d;
    unsigned leaf = 4;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x8000001Du &&
        __get_cpuid(0x80000001u, &a, &b, &c, &d) && ((c >> 22) & 1)) /* TopologyExtensions */
        leaf = 0x8000001Du;
    else if (!__get_cpuid(0, &a, &b, &c, &d) || a < 4)
        return legacy_llc_bytes();
    size_t best = 0;
    unsigned best_level = 0;
    for (unsigned i = 0; i < 16; i++) {
        __cpuid_count(leaf, i, a, b, c, d);
        const unsigned type = a & 0x1f, level = (a >> 5) & 7;
        if (type == 0)
            break;
        if (type == 2) /* instruction cache */
            continue;
        const size_t ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1,
                     line = (b & 0xfff) + 1, sets = (size_t)c + 1;
        if (level >= best_level) {
            best_level = level;
            best = ways * parts * line * sets;
        }
    }
    return best ? best : legacy_llc_bytes();
}

/* AMD Zen (family 0x17 on, and Hygon's Zen): an L3 that is a victim cache of L2 and a
   prefetchnta that fills L2 without that victim write (dispatch.c). Zen 5 (family 0x1a
   on): float rows up to 16 KiB hinted; Zen 3 (family 0x19, models 0x00-0x0f and
   0x20-0x5f; Zen 4 has the others) up to 32 KiB; the others keep 8 KiB
   (kernels/ln_common.h). */
unsigned ln_amd_nt_hints(unsigned family, unsigned model)
{
    const int zen3 = family == 0x19 && (model < 0x10 || (model >= 0x20 && model < 0x60));
    return (family >= 0x17 ? LN_NT_PF_NTA : 0u) | (family >= 0x1a ? LN_NT_PF_LONG : 0u) |
           (zen3 ? LN_NT_PF_LONG32 : 0u);
}

unsigned ln_cpu_nt_hints(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    const int amd = (b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u) || /* AuthenticAMD */
                    (b == 0x6f677948u && d == 0x6e65476eu && c == 0x656e6975u);   /* HygonGenuine */
    if (!amd || !__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const unsigned base = (a >> 8) & 0xf, family = base + (base == 0xf ? (a >> 20) & 0xff : 0);
    const unsigned model = ((a >> 4) & 0xf) | (base == 0xf ? (a >> 12) & 0xf0 : 0);
    return ln_amd_nt_hints(family, model);
}
