// Package hostsplit routes each discovered URL to the node that owns its host.
//
// The owner is the rendezvous hash of the host (or registered domain) over the
// membership list, so a membership change moves only the hosts of the node
// that joined or left. Local URLs go to the local front cache and DUE; remote
// URLs pass a per-peer front cache (hits are not sent: this is the
// cross-machine traffic the caching study saves), then go into front-coded
// batches spooled on disk until the peer acknowledges them.
//
// Design: the host splitter of Mercator as described in Broder, Najork &
// Wiener, "Efficient URL Caching for World Wide Web Crawling" (WWW 2003);
// front coding from Koht-arsa & Sanguanpong's in-memory URL compression.
package hostsplit
