package allocator

// tree is an ordered set of blocks, a treap whose nodes are the blocks themselves (a block sits in at most one
// tree), so that inserting and removing allocate nothing. A size tree orders by (stream, size, address) like
// PyTorch's BlockComparatorSize; an address tree by (stream, address) like BlockComparatorAddress.
type tree struct {
	root   *block
	byAddr bool
	n      int
}

// key is a search key in a tree's order.
type key struct {
	stream uint64
	size   int64
	addr   uint64
}

func (t *tree) keyOf(b *block) key { return key{b.stream, b.size, b.addr} }

// less orders keys; an address tree ignores sizes.
func (t *tree) less(a, b key) bool {
	if a.stream != b.stream {
		return a.stream < b.stream
	}
	if !t.byAddr && a.size != b.size {
		return a.size < b.size
	}
	return a.addr < b.addr
}

func (t *tree) insert(b *block) {
	b.left, b.right, b.inTree = nil, nil, true
	k := t.keyOf(b)
	// Descend to where b's priority puts it, then split only that subtree under it.
	link := &t.root
	for n := *link; n != nil && n.prio > b.prio; n = *link {
		if t.less(k, t.keyOf(n)) {
			link = &n.left
		} else {
			link = &n.right
		}
	}
	b.left, b.right = t.split(*link, k)
	*link = b
	t.n++
}

// remove takes b out of the tree; b must be in it.
func (t *tree) remove(b *block) {
	k := t.keyOf(b)
	link := &t.root
	for n := *link; n != nil && n != b; n = *link {
		if t.less(k, t.keyOf(n)) {
			link = &n.left
		} else {
			link = &n.right
		}
	}
	t.removeAt(link)
}

// split divides n into the nodes ordered before k and the rest.
func (t *tree) split(n *block, k key) (*block, *block) {
	if n == nil {
		return nil, nil
	}
	if t.less(t.keyOf(n), k) {
		l, r := t.split(n.right, k)
		n.right = l
		return n, r
	}
	l, r := t.split(n.left, k)
	n.left = r
	return l, n
}

// merge joins two treaps whose keys are all ordered l before r.
func merge(l, r *block) *block {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = merge(l.right, r)
		return l
	default:
		r.left = merge(l, r.left)
		return r
	}
}

// lowerBound returns the first block not ordered before k, nil when there is none.
func (t *tree) lowerBound(k key) *block {
	b, _ := t.lowerBoundAt(k)
	return b
}

// lowerBoundAt is lowerBound, also returning the link that points at the block (for removeAt), nil with it.
func (t *tree) lowerBoundAt(k key) (*block, **block) {
	var best *block
	var at **block
	for link := &t.root; *link != nil; {
		n := *link
		if t.less(t.keyOf(n), k) {
			link = &n.right
		} else {
			best, at, link = n, link, &n.left
		}
	}
	return best, at
}

// removeAt takes out the block that link (from lowerBoundAt, with no change to the tree since) points at,
// without searching for it again.
func (t *tree) removeAt(link **block) {
	b := *link
	*link = merge(b.left, b.right)
	b.left, b.right, b.inTree = nil, nil, false
	t.n--
}

// next returns the block after b in order (b need not be in the tree), nil at the end.
func (t *tree) next(b *block) *block {
	k := t.keyOf(b)
	var best *block
	for n := t.root; n != nil; {
		if t.less(k, t.keyOf(n)) {
			best, n = n, n.left
		} else {
			n = n.right
		}
	}
	return best
}

// prevOf returns the last block ordered before k, nil when there is none.
func (t *tree) prevOf(k key) *block {
	var best *block
	for n := t.root; n != nil; {
		if t.less(t.keyOf(n), k) {
			best, n = n, n.right
		} else {
			n = n.left
		}
	}
	return best
}

// appendAll appends the blocks in order to dst.
func (t *tree) appendAll(dst []*block) []*block {
	var walk func(n *block)
	walk = func(n *block) {
		if n == nil {
			return
		}
		walk(n.left)
		dst = append(dst, n)
		walk(n.right)
	}
	walk(t.root)
	return dst
}
