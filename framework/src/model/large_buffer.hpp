// Large buffers written once from start to end (an input read into memory, a snapshot built for
// the archive): advising transparent huge pages before the first write saves most of their page
// faults, which were a large share of reading and snapshotting a big session.
#pragma once

#include <cstddef>

namespace compactor {

// Advice only, over the 2 MiB-aligned part of [data, data + size) when it spans at least two
// huge pages; a no-op where transparent huge pages are off or the kernel declines.
void advise_huge_pages(void* data, std::size_t size);

}  // namespace compactor
