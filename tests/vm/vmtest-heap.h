/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vmtest-heap.h: the bytes a test process has allocated and not freed, sanitizer or not. */
#pragma once

#include <malloc.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VMTEST_HEAP_FROM_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VMTEST_HEAP_FROM_SANITIZER 1
#endif

#ifdef VMTEST_HEAP_FROM_SANITIZER
/* From <sanitizer/allocator_interface.h>, which gcc does not install. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* Live heap bytes, without a sanitizer's quarantine or malloc's caches:
 * what the process holds, where RSS also counts what the allocator keeps. */
static inline size_t
vmtest_heap_in_use(void)
{
#ifdef VMTEST_HEAP_FROM_SANITIZER
	return __sanitizer_get_current_allocated_bytes();
#else
	return mallinfo2().uordblks;
#endif
}
