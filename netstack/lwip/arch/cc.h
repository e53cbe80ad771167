/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* arch/cc.h: lwIP's compiler and platform glue for Linux hosts, logging through GLib. */
#ifndef NCM_LWIP_ARCH_CC_H
#define NCM_LWIP_ARCH_CC_H

/*
 * Every lwIP source includes this header, so it stays free of glib.h: the
 * GLib side lives in sys_arch.c behind the ncm_lwip_* functions below.
 * Integer types and their printf formats come from lwIP's own arch.h via
 * <stdint.h> and <inttypes.h> (LWIP_NO_STDINT_H / LWIP_NO_INTTYPES_H unset).
 */

#include <endian.h>
#include <errno.h>
#include <stdint.h>
/* lwIP 2.1.3's nd6.c reads RDNSS lifetimes with htonl(), not lwip_htonl():
 * with LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS nothing would declare it, and
 * an implicit declaration returns int (lifetimes above 2^31 s would then
 * read as a removal). The C library's declaration is the one meant. */
#include <arpa/inet.h>

/* glibc's <endian.h> defines BYTE_ORDER, LITTLE_ENDIAN and BIG_ENDIAN with
 * the values lwIP compares against; lwIP would otherwise assume little. */
#ifndef BYTE_ORDER
#error "<endian.h> did not define BYTE_ORDER"
#endif

/* Single-instruction byte swaps instead of lwIP's portable shifts in def.c. */
#if BYTE_ORDER == LITTLE_ENDIAN
#define lwip_htons(x) ((u16_t)__builtin_bswap16((u16_t)(x)))
#define lwip_htonl(x) ((u32_t)__builtin_bswap32((u32_t)(x)))
#endif

/* errno and its E* values are the C library's: lwIP's errno.h includes
 * <errno.h> when this is defined. LWIP_PROVIDE_ERRNO must stay undefined
 * (lwIP tests it with #ifdef, so even 0 would make lwIP define its own). */
#define LWIP_ERRNO_STDINCLUDE 1

/* ISNs, DHCP xids, IPv6 interface ids and local ports must not repeat
 * across runs, which rand() without a seed would do. */
#define LWIP_RAND() ncm_lwip_rand()
uint32_t ncm_lwip_rand(void);

/* lwIP's debug output (only with LWIP_DEBUG): x is a parenthesised printf
 * argument list, logged at debug level in the "ncm-lwip" domain. A library
 * never prints to stdout. */
#define LWIP_PLATFORM_DIAG(x) ncm_lwip_diag x
void ncm_lwip_diag(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* A failed lwIP assertion means its state is corrupt: log it as an error
 * (which aborts) rather than carry on with broken pcbs or pbufs. */
#define LWIP_PLATFORM_ASSERT(x) ncm_lwip_assert_failed((x), __FILE__, __LINE__)
void ncm_lwip_assert_failed(const char *message, const char *file, int line)
    __attribute__((noreturn));

#endif /* NCM_LWIP_ARCH_CC_H */
