// Package extract finds the links in a fetched document and filters them.
//
// A streaming golang.org/x/net/html tokenizer (no DOM) yields URLs from every
// attribute that can carry one — a/area/link href, img/script/iframe/frame/
// embed/source/audio/video src, srcset, form action, meta refresh — honouring
// <base href>. Each link is resolved and normalised (WHATWG URL rules: scheme
// and host case, default port, dot-segments, percent-encoding, fragment
// dropped) and passed through the URL filter: schemes, length, repeated path
// segments, depth, per-host budgets and scope rules.
//
// Mercator extracts every link, not only anchors (Heydon & Najork, 1999;
// Broder, Najork & Wiener, WWW 2003).
package extract
