package candidates

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// fileStable is Raft's StableStore (current term, last vote) in one JSON file, rewritten and
// fsynced on every change. It is what must survive a crash for Raft's one-vote-per-term rule
// to hold when a killed candidate restarts; the log can stay in memory (see raft.go).
type fileStable struct {
	mu   sync.Mutex
	path string
	kv   map[string][]byte
}

const raftKeyCurrentTerm = "CurrentTerm" // the key hashicorp/raft stores the term under

func openFileStable(dir string) (*fileStable, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft state dir: %w", err)
	}
	s := &fileStable{path: filepath.Join(dir, "stable.json"), kv: map[string][]byte{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.kv); err != nil {
		return nil, fmt.Errorf("raft state %s: %w", s.path, err)
	}
	return s, nil
}

func (s *fileStable) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv[string(key)] = append([]byte(nil), val...)
	return s.save()
}

// Get returns the error text "not found" for a missing key, as the library expects.
func (s *fileStable) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, errors.New("not found")
	}
	return v, nil
}

func (s *fileStable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns 0 for a missing key, as the library's in-memory store does.
func (s *fileStable) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil || len(v) != 8 {
		return 0, nil
	}
	return binary.BigEndian.Uint64(v), nil
}

func (s *fileStable) save() error {
	b, err := json.Marshal(s.kv)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

func mustUint64(s *fileStable, key string) uint64 {
	v, _ := s.GetUint64([]byte(key))
	return v
}
