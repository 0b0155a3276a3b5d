// Package internal groups helpers shared by Sextant's packages; the helpers
// live in sub-packages, one concept each.
package internal
