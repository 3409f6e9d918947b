package maps

import (
	"encoding/binary"
	"math/bits"
)

// The hash function of hash maps. It is meant to be emitted as native code
// for a map's fixed key size, so it uses only 64-bit loads, xor, multiply and
// shifts:
//
//	h = seed ^ (keySize * HashK1)
//	key words w (little-endian 8-byte words; a final partial word is
//	zero-extended, loaded with 4-, 2- and 1-byte loads):
//	  a key of up to 8 bytes, one word:  h = (h ^ w) * HashK1
//	  a longer key, for each word:       h = rotl64(h ^ (w * HashK2), 31) * HashK1
//	h ^= h >> 33; h *= HashK3; h ^= h >> 29; h *= HashK4; h ^= h >> 32
//	hash = uint32(h)
//
// The finalizer is murmur3's avalanche, so that the low bits, which select
// the bucket, depend on every key byte (keys that differ only in their high
// bytes, such as IPv4 addresses, still spread). For one word the round is a
// bijection of the word, so no two keys share h before the finalizer (itself
// a bijection) and a plain xor-multiply is enough; over several words the
// round is xxHash64's, whose multiply before the rotation keeps a difference
// in one word from being cancelled by the next whatever the seed. Since all
// keys of a map have its key size, the size term is part of the map's
// initial state (HashFieldHashInit). The seed is random per map unless
// FlagZeroSeed is set.
//
// The constants are exported for the rewrite that emits the function as BPF
// instructions (rewrite/inline_hash.go); TestEmittedHash keeps the two equal.
const (
	HashK1 = 0x9e3779b185ebca87
	HashK2 = 0xc2b2ae3d27d4eb4f
	HashK3 = 0xff51afd7ed558ccd
	HashK4 = 0xc4ceb9fe1a85ec53
)

// HashKey hashes key with seed as described above: the hash that selects a
// key's bucket in hash maps.
func HashKey(seed uint64, key []byte) uint32 {
	h := seed ^ uint64(len(key))*HashK1
	if len(key) <= 8 {
		return hashFinal((h ^ tailWord(key)) * HashK1)
	}
	for len(key) >= 8 {
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(key)*HashK2, 31) * HashK1
		key = key[8:]
	}
	if len(key) > 0 {
		h = bits.RotateLeft64(h^tailWord(key)*HashK2, 31) * HashK1
	}
	return hashFinal(h)
}

// tailWord is the zero-extended little-endian value of up to 8 bytes.
func tailWord(key []byte) uint64 {
	if len(key) == 8 {
		return binary.LittleEndian.Uint64(key)
	}
	var w uint64
	var shift uint
	if len(key) >= 4 {
		w = uint64(binary.LittleEndian.Uint32(key))
		key, shift = key[4:], 32
	}
	if len(key) >= 2 {
		w |= uint64(binary.LittleEndian.Uint16(key)) << shift
		key, shift = key[2:], shift+16
	}
	if len(key) == 1 {
		w |= uint64(key[0]) << shift
	}
	return w
}

// hashFinal is the finalizer.
func hashFinal(h uint64) uint32 {
	h ^= h >> 33
	h *= HashK3
	h ^= h >> 29
	h *= HashK4
	h ^= h >> 32
	return uint32(h)
}
