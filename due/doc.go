// Package due is Mercator's disk-based Duplicate URL Eliminator.
//
// Candidate (fingerprint, URL) pairs that miss the front cache are buffered in
// memory; the seen-set lives on disk as sorted 64-bit fingerprints. When the
// buffer fills, or a time limit passes, it is sorted and merged with the disk
// set in one sequential pass; every buffered fingerprint not already on disk is
// new and its URL is emitted to the frontier in arrival order.
//
// Design: Broder, Najork & Wiener, "Efficient URL Caching for World Wide Web
// Crawling" (WWW 2003), section 2 (Mercator's DUE).
package due
