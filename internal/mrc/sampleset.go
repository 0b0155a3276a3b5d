package mrc

// sampleSet holds sampled fingerprints with the logical time of their last
// access and answers stack distances: the number of distinct tracked
// fingerprints accessed since a fingerprint's previous access. A Fenwick
// tree over access times holds a 1 at each tracked fingerprint's last
// access. Times are renumbered (compacted) when they run out.
type sampleSet struct {
	last map[uint64]uint32 // fp → time of last access
	at   []uint64          // time → fp (valid only where the tree holds a 1)
	tree []int32           // Fenwick tree over times, 1-based
	now  uint32            // next time to hand out
	n    int               // tracked fingerprints
}

func newSampleSet(capacity int) *sampleSet {
	slots := 2*capacity + 64
	return &sampleSet{
		last: make(map[uint64]uint32, capacity+1),
		at:   make([]uint64, slots),
		tree: make([]int32, slots+1),
	}
}

func (s *sampleSet) add(i int, d int32) {
	for i++; i < len(s.tree); i += i & -i {
		s.tree[i] += d
	}
}

// prefix returns the number of ones at times < i.
func (s *sampleSet) prefix(i int) int {
	sum := int32(0)
	for ; i > 0; i -= i & -i {
		sum += s.tree[i]
	}
	return int(sum)
}

// access records an access to fp and returns its stack distance, or
// found=false if fp was not tracked (it is now).
func (s *sampleSet) access(fp uint64) (dist int, found bool) {
	if int(s.now) == len(s.at) {
		s.compact()
	}
	t, ok := s.last[fp]
	if ok {
		dist = s.n - s.prefix(int(t)+1) // ones after t
		s.add(int(t), -1)
	} else {
		s.n++
	}
	s.last[fp] = s.now
	s.at[s.now] = fp
	s.add(int(s.now), 1)
	s.now++
	return dist, ok
}

// remove stops tracking fp.
func (s *sampleSet) remove(fp uint64) {
	t, ok := s.last[fp]
	if !ok {
		return
	}
	delete(s.last, fp)
	s.add(int(t), -1)
	s.n--
}

// oldest returns the least recently accessed tracked fingerprint.
func (s *sampleSet) oldest() (uint64, bool) {
	if s.n == 0 {
		return 0, false
	}
	// Fenwick descent: the smallest time with prefix count 1.
	pos, rem := 0, int32(1)
	step := 1
	for step*2 < len(s.tree) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if pos+step < len(s.tree) && s.tree[pos+step] < rem {
			pos += step
			rem -= s.tree[pos]
		}
	}
	return s.at[pos], true // pos is the 0-based time
}

// compact renumbers the live times 0..n-1 in order and rebuilds the tree.
func (s *sampleSet) compact() {
	j := uint32(0)
	for t := uint32(0); t < s.now; t++ {
		fp := s.at[t]
		if lt, ok := s.last[fp]; ok && lt == t {
			s.at[j] = fp
			s.last[fp] = j
			j++
		}
	}
	clear(s.tree)
	for i := 1; i < len(s.tree); i++ {
		if i <= int(j) {
			s.tree[i]++
		}
		if p := i + i&-i; p < len(s.tree) {
			s.tree[p] += s.tree[i]
		}
	}
	s.now = j
}

// bytes estimates the memory held (a Go map entry costs about 24 bytes with
// its share of buckets at the load used here).
func (s *sampleSet) bytes(capacity int) int {
	return len(s.at)*8 + len(s.tree)*4 + (capacity+1)*24
}
