package snapshot

import "fmt"

type changeKind uint8

const (
	changeAddNode changeKind = iota
	changeRemoveNode
	changeAddPod
	changeRemovePod
	changeObject
)

// change is one recorded mutation; revert applies its inverse.
type change struct {
	kind changeKind
	node *NodeInfo
	pod  *PodInfo
	// at and antiAt are where a removed pod sat in its node's lists.
	at, antiAt int
	// restore puts back a namespace, volume, claim, class or group as it
	// was before a Set call (it deletes it when it was absent).
	restore func()
}

// undoLog holds the changes made since the oldest open fork; marks are the
// log lengths at which each open fork started.
type undoLog struct {
	changes []change
	marks   []int
}

func (s *Snapshot) changed(c change) {
	s.generation++
	if c.node != nil {
		c.node.stamp = s.generation
	}
	if len(s.undo.marks) > 0 {
		s.undo.changes = append(s.undo.changes, c)
	}
}

// Fork opens a new level of changes that Revert can undo. Forks nest.
func (s *Snapshot) Fork() {
	s.undo.marks = append(s.undo.marks, len(s.undo.changes))
}

// Revert undoes every change made since the latest Fork and closes it.
func (s *Snapshot) Revert() error {
	n := len(s.undo.marks)
	if n == 0 {
		return fmt.Errorf("revert: no fork is open")
	}
	mark := s.undo.marks[n-1]
	s.undo.marks = s.undo.marks[:n-1]
	// Undo newest first. The inverse operations record changes of their own
	// while outer forks are open; drop them, the outer log already holds the
	// originals that cancel out.
	pending := s.undo.changes[mark:]
	saved := s.undo.marks
	s.undo.marks = nil
	for i := len(pending) - 1; i >= 0; i-- {
		s.apply(pending[i])
	}
	s.undo.marks = saved
	clear(pending)
	s.undo.changes = s.undo.changes[:mark]
	return nil
}

// Commit keeps the changes made since the latest Fork and closes it; an
// enclosing fork can still revert them.
func (s *Snapshot) Commit() error {
	n := len(s.undo.marks)
	if n == 0 {
		return fmt.Errorf("commit: no fork is open")
	}
	s.undo.marks = s.undo.marks[:n-1]
	if n == 1 {
		clear(s.undo.changes)
		s.undo.changes = s.undo.changes[:0]
	}
	return nil
}

// ForkDepth is the number of open forks.
func (s *Snapshot) ForkDepth() int { return len(s.undo.marks) }

func (s *Snapshot) apply(c change) {
	switch c.kind {
	case changeAddNode:
		s.deleteNode(c.node)
	case changeRemoveNode:
		s.insertNode(c.node)
	case changeAddPod:
		s.unbindPod(c.pod)
	case changeRemovePod:
		s.bindPod(c.pod, c.node, c.at, c.antiAt)
	case changeObject:
		c.restore()
		s.generation++
	}
}
