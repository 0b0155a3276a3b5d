// Package simweb is the deterministic synthetic web every test and the demo
// crawl.
package simweb
