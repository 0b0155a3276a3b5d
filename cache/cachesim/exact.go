package cachesim

// exactClockMisses simulates textbook CLOCK (second chance) with k frames
// over the dense ids: a hit sets the entry's mark; a miss fills the next
// free frame while there is one, else advances the hand over the frames in
// order, clearing marks, to the first unmarked entry, replaces it and
// steps past it. A new entry is marked iff marked: the paper's CLOCK
// inserts unmarked; the production cache.Clock inserts marked, and also
// differs in its frame order (slot order of a scatter table) and in
// evicting within a bucket pair when both of its buckets are full, so the
// simulator runs both exact variants to separate the two causes.
func exactClockMisses(ids []uint32, d, k int, marked bool, m *meter) (uint64, error) {
	if k <= 0 {
		_ = m.tick(len(ids))
		return uint64(len(ids)), nil
	}
	frame := make([]int32, d) // id → its frame, −1 when not resident
	for i := range frame {
		frame[i] = -1
	}
	ids0 := make([]uint32, 0, k) // frame → id
	mark := make([]bool, k)
	hand := 0
	var misses uint64
	for t, id := range ids {
		if f := frame[id]; f >= 0 {
			mark[f] = true
		} else {
			misses++
			if len(ids0) < k {
				frame[id] = int32(len(ids0))
				mark[len(ids0)] = marked
				ids0 = append(ids0, id)
			} else {
				for mark[hand] {
					mark[hand] = false
					if hand++; hand == k {
						hand = 0
					}
				}
				frame[ids0[hand]] = -1
				ids0[hand], mark[hand], frame[id] = id, marked, int32(hand)
				if hand++; hand == k {
					hand = 0
				}
			}
		}
		if (t+1)%tickEvery == 0 {
			if err := m.tick(tickEvery); err != nil {
				return 0, err
			}
		}
	}
	_ = m.tick(len(ids) % tickEvery)
	return misses, nil
}
