package urlnorm

// Canonical returns the parsed form of s, which must already be canonical:
// the String of a URL, or the output of Normalize or AppendResolved. It only
// locates the components (one scan, one allocation) and does not check s;
// for any other string use Parse. It lets a caller that holds canonical
// strings — the extractor's links — skip parsing them again.
func Canonical(s string) *URL {
	u := &URL{s: s}
	u.split()
	return u
}
