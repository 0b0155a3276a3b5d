// Package due is Mercator's disk-based Duplicate URL Eliminator.
//
// Candidate (fingerprint, URL) pairs that miss the front cache are buffered in
// memory; the seen-set lives on disk as sorted 64-bit fingerprints. When the
// buffer fills, or a time limit passes, it is sorted and merged with the disk
// set in one sequential pass; every buffered fingerprint not already on disk is
// new and its URL is emitted to the frontier in arrival order.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003), section 2 (Mercator's DUE); the front coding of
// delivered batches follows Koht-arsa & Sanguanpong.
//
// # Layout and memory
//
// The buffer holds only fingerprints (an arrival-ordered array plus an
// open-addressing table, ≈16 bytes per buffered candidate, twice that while
// the previous buffer is merged). URLs go to an append-only, checksummed log
// before Add returns, and the merge reads them back from the log in arrival
// order, so RAM does not grow with URL length. The disk set is a few sorted
// runs of Elias-Fano coded blocks (≈4.9 bytes per fingerprint at 10⁸ URLs)
// with a checksum per block and a block index in memory (≈0.01 byte per
// fingerprint). Runs are tiered: a merge writes the new fingerprints merged
// with only the newest, smallest runs (Options.RunRatio), so one merge does
// not rewrite the whole set; every merge still probes all runs, skipping
// blocks whose key range holds no buffered fingerprint.
//
// # Depth and seen-only entries
//
// An Entry carries a link Depth, stored with its URL in the log and the
// batch files and delivered with it (the first offer of a URL decides its
// depth). An Entry marked SeenOnly is recorded in the seen-set like any
// other — durably, merged into the runs — but never delivered: any later
// offer of its fingerprint is a duplicate. It serves to hand over URLs that
// were fetched elsewhere (a host moving between nodes). The on-disk format
// is version 2; a directory written by version 1 is refused (ErrCorrupt)
// with a message saying so.
//
// # Exactly-once hand-off
//
// Each merge that finds new URLs writes them as a batch file with the next
// sequence number and commits it, together with the new runs and the end of
// the merged logs, by renaming the MANIFEST. Batches are then passed to
// Sink.Deliver in seq order; a batch stays pending (and is delivered again
// after a crash, with the same seq and URLs) until Deliver returned nil and
// that was recorded in the MANIFEST. The Sink must ignore a seq ≤ the last one
// it applied, atomically with storing the URLs; then a kill at any instant
// loses no acknowledged URL and the frontier applies each new URL once.
//
// # Caller's duties
//
//   - Pass normalised URLs with fp = internal/fingerprint.URL(url).
//   - Treat Add's nil return as the acknowledgement: with SyncAlways the
//     candidate is then on stable storage (peers may be acked).
//   - Close the DUE; call Flush first to merge and deliver the buffer now
//     (otherwise it stays in the log and is merged after the next Open).
//   - After an error wrapping ErrFailed, Close and Open again: recovery
//     redoes the interrupted merge from the log. ErrCorrupt means a file
//     failed its checksum: the DUE refuses to start rather than forget URLs.
//
// A DUE owns one goroutine (the merger: merges when the buffer fills and every
// FlushInterval, and retries failed deliveries); Close waits for it. All
// methods are safe for concurrent use. Add blocks while the buffer is full and
// the previous buffer is still being merged.
package due
