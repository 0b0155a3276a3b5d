package cache

import (
	"math/rand/v2"
	"slices"
)

// Brute-force reference policies: obviously correct, slow.

// refClockTextbook is CLOCK over k frames in insertion order: the new entry
// takes the victim's frame, marked.
func refClockTextbook(trace []uint64, k int) uint64 {
	frames := make([]uint64, 0, k)
	marks := make([]bool, 0, k)
	hand := 0
	var misses uint64
	for _, fp := range trace {
		if i := slices.Index(frames, fp); i >= 0 {
			marks[i] = true
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			frames = append(frames, fp)
			marks = append(marks, true)
			continue
		}
		for marks[hand] {
			marks[hand] = false
			hand = (hand + 1) % k
		}
		frames[hand], marks[hand] = fp, true
		hand = (hand + 1) % k
	}
	return misses
}

// textbookClock is refClockTextbook with a map index, for long traces.
func textbookClock(trace []uint64, k int) uint64 {
	frames := make([]uint64, 0, k)
	marks := make([]bool, 0, k)
	where := make(map[uint64]int, k)
	hand := 0
	var misses uint64
	for _, fp := range trace {
		fp = Key(fp)
		if i, ok := where[fp]; ok {
			marks[i] = true
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			where[fp] = len(frames)
			frames = append(frames, fp)
			marks = append(marks, true)
			continue
		}
		for marks[hand] {
			marks[hand] = false
			hand = (hand + 1) % k
		}
		delete(where, frames[hand])
		frames[hand], marks[hand] = fp, true
		where[fp] = hand
		hand = (hand + 1) % k
	}
	return misses
}

// textbookRandom is RANDOM over k frames: a miss with the cache full
// evicts a frame chosen uniformly at random.
func textbookRandom(trace []uint64, k int, seed uint64) uint64 {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	frames := make([]uint64, 0, k)
	where := make(map[uint64]int, k)
	var misses uint64
	for _, fp := range trace {
		fp = Key(fp)
		if _, ok := where[fp]; ok {
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			where[fp] = len(frames)
			frames = append(frames, fp)
			continue
		}
		i := r.IntN(k)
		delete(where, frames[i])
		frames[i] = fp
		where[fp] = i
	}
	return misses
}
