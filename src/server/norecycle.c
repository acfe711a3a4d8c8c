/* SPDX-License-Identifier: MIT */
/* Sanitizer builds only: h2o 2.2.5 keeps freed memory-pool chunks and socket buffers in per-thread free lists
 * (h2o_mem_alloc_recycle / h2o_mem_free_recycle) and hands them out again. A write into such a chunk after its
 * owner let go of it is invisible to AddressSanitizer — it only shows later, as h2o's free list found corrupt
 * ("h2o_mem_alloc_recycle: Assertion `chunk != NULL' failed"). These definitions take the place of h2o's own
 * (the library calls them through its PLT, so the executable's copies win): every chunk comes from malloc and
 * goes back to free, and ASan reports the use after free where it happens. Socket buffers freed inside the
 * library may bypass the PLT: each event-loop thread also sets their cache's size to 0 (server.c). */
#include <stdlib.h>
#include <h2o.h>

void *h2o_mem_alloc_recycle(h2o_mem_recycle_t *allocator, size_t sz)
{
    (void)allocator;
    return h2o_mem_alloc(sz);
}

void h2o_mem_free_recycle(h2o_mem_recycle_t *allocator, void *p)
{
    (void)allocator;
    free(p);
}
