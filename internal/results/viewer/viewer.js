// memscan's interactive timeline: every device of every input, drawn on a canvas from the replayed trace that the
// page embeds (see results/page_data.go for the blob layout). Allocated and reserved memory are rebuilt exactly
// after every event; a pyramid of per-bucket minimum and maximum keeps each pixel column's true extremes at any
// zoom, so no spike is ever hidden. No network, no library: only what the browser has.
(function () {
  'use strict';

  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function human(b) {
    var neg = b < 0, v = Math.abs(b), u = 0;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return (neg ? '-' : '') + (u === 0 ? String(v) : v.toFixed(1)) + ' ' + UNITS[u];
  }
  function exact(b) { return String(b).replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f'); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function b64bytes(s) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s, { alphabet: 'base64url' }); // native, no copies
    var bin = atob(s.replace(/-/g, '+').replace(/_/g, '/')), n = bin.length, u = new Uint8Array(n);
    for (var i = 0; i < n; i++) u[i] = bin.charCodeAt(i);
    return u;
  }
  function inflate(u8) {
    var stream = new Blob([u8]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }

  // Reader of LEB128 varints; arithmetic instead of bit operations keeps values above 2^31 exact.
  function Reader(b) { this.b = b; this.p = 0; }
  Reader.prototype.u = function () {
    var b = this.b, p = this.p, x = 0, m = 1, c;
    do { c = b[p++]; x += (c & 127) * m; m *= 128; } while (c & 128);
    this.p = p;
    return x;
  };
  Reader.prototype.s = function () { var v = this.u(); return v % 2 ? -(v + 1) / 2 : v / 2; };
  // column decodes out.length varints into out (zig-zag when signed) in one tight loop: the columns of a large
  // trace hold millions of values, and a call per value would dominate the page's load.
  Reader.prototype.column = function (out, signed) {
    var b = this.b, p = this.p, n = out.length, i, x, m, c;
    for (i = 0; i < n; i++) {
      c = b[p++];
      if (c < 128) { x = c; } else {
        x = c & 127; m = 128;
        do { c = b[p++]; x += (c & 127) * m; m *= 128; } while (c & 128);
      }
      out[i] = signed ? (x % 2 ? -(x + 1) / 2 : x / 2) : x;
    }
    this.p = p;
  };

  var FANOUT = 8, CHECKPOINT = 1024;

  // Model: the decoded trace, the allocated and reserved series, the min/max pyramid and category checkpoints.
  function Model(meta, bytes) {
    var r = new Reader(bytes);
    if (r.u() !== 1) throw new Error('memscan timeline: unknown data version');
    var n = r.u(), m = r.u(), nt = r.u(), nr = r.u(), nw = r.u(), ns = r.u(), nf = r.u(), i, j, k;
    this.meta = meta; this.n = n; this.m = m;
    var start = new Int32Array(m), end = new Int32Array(m), size = new Float64Array(m);
    var site = new Int32Array(m), stack = new Int32Array(m), reason = new Int32Array(m);
    var prev = 0, col = new Float64Array(m);
    r.column(col, true);
    for (i = 0; i < m; i++) { prev += col[i]; start[i] = prev; }
    r.column(col, true);
    for (i = 0; i < m; i++) end[i] = start[i] + col[i];
    r.column(size, false);
    r.column(col, false); site.set(col);
    r.column(col, false);
    for (i = 0; i < m; i++) stack[i] = col[i] - 1;
    r.column(col, false); reason.set(col);
    var time = null;
    if (nt) { time = new Float64Array(nt); r.column(time, true); for (i = 1; i < nt; i++) time[i] += time[i - 1]; }
    var resEv = new Int32Array(nr), resD = new Float64Array(nr);
    prev = 0;
    for (i = 0; i < nr; i++) { prev += r.u(); resEv[i] = prev; resD[i] = r.s(); }
    var wEv = new Int32Array(nw), wRes = new Float64Array(nw), pv = 0;
    prev = 0;
    for (i = 0; i < nw; i++) { prev += r.s(); wEv[i] = prev; pv += r.s(); wRes[i] = pv; }
    var stackStart = new Int32Array(ns + 1);
    for (i = 0; i < ns; i++) stackStart[i + 1] = stackStart[i] + r.u();
    var frames = new Int32Array(nf);
    for (i = 0; i < nf; i++) frames[i] = r.u();
    this.start = start; this.end = end; this.size = size; this.site = site; this.stack = stack; this.reason = reason;
    this.time = time; this.whatIfEv = wEv; this.whatIfRes = wRes; this.stackStart = stackStart; this.frames = frames;

    var C = meta.categories.length, cat = new Int32Array(m);
    for (i = 0; i < m; i++) cat[i] = meta.site_category[site[i]];
    this.cat = cat; this.C = C;
    var alloc = new Float64Array(n), res = new Float64Array(n);
    var sCount = new Int32Array(n + 1), eCount = new Int32Array(n + 1);
    var init = new Float64Array(C);
    for (i = 0; i < m; i++) {
      if (start[i] >= 0) { alloc[start[i]] += size[i]; sCount[start[i] + 1]++; } else init[cat[i]] += size[i];
      if (end[i] < n) { alloc[end[i]] -= size[i]; eCount[end[i] + 1]++; }
    }
    var cur = meta.initial_allocated;
    for (j = 0; j < n; j++) { cur += alloc[j]; alloc[j] = cur; }
    cur = meta.initial_reserved; k = 0;
    for (j = 0; j < n; j++) { while (k < nr && resEv[k] === j) cur += resD[k++]; res[j] = cur; }
    this.alloc = alloc; this.res = res;
    // Blocks by start and by end event (counting sort), for the category checkpoints.
    for (j = 0; j < n; j++) { sCount[j + 1] += sCount[j]; eCount[j + 1] += eCount[j]; }
    var sIdx = new Int32Array(sCount[n]), eIdx = new Int32Array(eCount[n]);
    var sPos = sCount.slice(0, n), ePos = eCount.slice(0, n);
    for (i = 0; i < m; i++) {
      if (start[i] >= 0) sIdx[sPos[start[i]]++] = i;
      if (end[i] < n) eIdx[ePos[end[i]]++] = i;
    }
    this.sOff = sCount; this.eOff = eCount; this.sIdx = sIdx; this.eIdx = eIdx;
    var nck = Math.floor(n / CHECKPOINT) + 1, ck = new Float64Array(nck * C), vec = init.slice();
    for (j = 0; j < n; j++) {
      if (j % CHECKPOINT === 0) ck.set(vec, (j / CHECKPOINT) * C);
      for (i = sCount[j]; i < sCount[j + 1]; i++) { k = sIdx[i]; vec[cat[k]] += size[k]; }
      for (i = eCount[j]; i < eCount[j + 1]; i++) { k = eIdx[i]; vec[cat[k]] -= size[k]; }
    }
    if (n % CHECKPOINT === 0) ck.set(vec, (n / CHECKPOINT) * C);
    this.ck = ck;
    // The pyramid: level L has buckets of FANOUT^L events with min and max allocated (and the event of the
    // maximum) and min and max reserved; level 0 is the series itself.
    this.levels = [];
    var srcAmin = alloc, srcAmax = alloc, srcArg = null, srcRmin = res, srcRmax = res, len = n, B = 1;
    while (len > FANOUT) {
      var L = Math.ceil(len / FANOUT);
      var amin = new Float64Array(L), amax = new Float64Array(L), arg = new Int32Array(L), rmin = new Float64Array(L), rmax = new Float64Array(L);
      for (var b = 0; b < L; b++) {
        var lo = b * FANOUT, hi = Math.min(len, lo + FANOUT), a0 = Infinity, a1 = -Infinity, g = -1, r0 = Infinity, r1 = -Infinity;
        for (var q = lo; q < hi; q++) {
          if (srcAmin[q] < a0) a0 = srcAmin[q];
          if (srcAmax[q] > a1) { a1 = srcAmax[q]; g = srcArg ? srcArg[q] : q; }
          if (srcRmin[q] < r0) r0 = srcRmin[q];
          if (srcRmax[q] > r1) r1 = srcRmax[q];
        }
        amin[b] = a0; amax[b] = a1; arg[b] = g; rmin[b] = r0; rmax[b] = r1;
      }
      B *= FANOUT;
      this.levels.push({ B: B, amin: amin, amax: amax, arg: arg, rmin: rmin, rmax: rmax });
      srcAmin = amin; srcAmax = amax; srcArg = arg; srcRmin = rmin; srcRmax = rmax; len = L;
    }
    var top = -Infinity, topAt = 0;
    for (j = 0; j < n; j++) if (alloc[j] > top) { top = alloc[j]; topAt = j; }
    this.peak = top; this.peakAt = topAt;
  }
  Model.prototype.apply = function (vec, j) {
    var i, b;
    for (i = this.sOff[j]; i < this.sOff[j + 1]; i++) { b = this.sIdx[i]; vec[this.cat[b]] += this.size[b]; }
    for (i = this.eOff[j]; i < this.eOff[j + 1]; i++) { b = this.eIdx[i]; vec[this.cat[b]] -= this.size[b]; }
  };
  // catsAt fills out (length C) with the live bytes per category after event j.
  Model.prototype.catsAt = function (j, out) {
    var c = Math.floor((j + 1) / CHECKPOINT), C = this.C;
    for (var k = 0; k < C; k++) out[k] = this.ck[c * C + k];
    for (var e = c * CHECKPOINT; e <= j; e++) this.apply(out, e);
  };
  // range returns the extremes over events [a, b), walking the largest aligned buckets that fit.
  Model.prototype.range = function (a, b, o) {
    var amin = Infinity, amax = -Infinity, arg = -1, rmin = Infinity, rmax = -Infinity, j = a, lv = this.levels;
    while (j < b) {
      var L = 0;
      while (L < lv.length && j % lv[L].B === 0 && j + lv[L].B <= b) L++;
      if (L === 0) {
        var v = this.alloc[j], w = this.res[j];
        if (v < amin) amin = v;
        if (v > amax) { amax = v; arg = j; }
        if (w < rmin) rmin = w;
        if (w > rmax) rmax = w;
        j++;
      } else {
        var l = lv[L - 1], q = j / l.B;
        if (l.amin[q] < amin) amin = l.amin[q];
        if (l.amax[q] > amax) { amax = l.amax[q]; arg = l.arg[q]; }
        if (l.rmin[q] < rmin) rmin = l.rmin[q];
        if (l.rmax[q] > rmax) rmax = l.rmax[q];
        j += l.B;
      }
    }
    o.amin = amin; o.amax = amax; o.arg = arg; o.rmin = rmin; o.rmax = rmax;
  };
  // live returns the largest blocks live after event j, largest first.
  Model.prototype.live = function (j, count) {
    var top = [], s = this.start, e = this.end, z = this.size;
    for (var i = 0; i < this.m; i++) {
      if (s[i] <= j && j < e[i] && (top.length < count || z[i] > z[top[top.length - 1]])) {
        var k = top.length < count ? top.length : count - 1;
        while (k > 0 && z[top[k - 1]] < z[i]) { top[k] = top[k - 1]; k--; }
        top[k] = i;
      }
    }
    return top;
  };
  Model.prototype.stackFrames = function (b) {
    var st = this.stack[b], out = [];
    if (st < 0) return out;
    for (var k = this.stackStart[st]; k < this.stackStart[st + 1]; k++) out.push(this.meta.frames[this.frames[k]]);
    return out;
  };
  Model.prototype.whatIfAt = function (j) {
    var ev = this.whatIfEv, lo = 0, hi = ev.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (ev[mid] <= j) lo = mid + 1; else hi = mid; }
    return lo > 0 ? this.whatIfRes[lo - 1] : NaN;
  };
  // eventAtTime returns the first event at or after time t.
  Model.prototype.eventAtTime = function (t) {
    var tm = this.time, lo = 0, hi = this.n;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (tm[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  };
  // moment gathers what the details panel shows about event j: memory then and the largest live blocks.
  Model.prototype.moment = function (j) {
    var self = this, top = this.live(j, 10);
    return Promise.resolve({
      event: j, time: this.time ? this.time[j] - this.time[0] : null, allocated: this.alloc[j], reserved: this.res[j],
      whatif: this.whatIfEv.length ? this.whatIfAt(j) : null,
      blocks: top.map(function (b) {
        return { size: self.size[b], category: self.meta.categories[self.cat[b]], site: self.meta.sites[self.site[b]],
          start: self.start[b], end: self.end[b], reason: self.meta.reasons[self.reason[b]], frames: self.stackFrames(b) };
      })
    });
  };
  // stackAt fills out (length C) with the live bytes per category after event j of column c.
  Model.prototype.stackAt = function (c, out) { this.catsAt(c.arg, out); };
  function where(meta, j) {
    var its = meta.iterations;
    for (var i = 0; i < its.length; i++) {
      var it = its[i];
      if (j < it.span[0] || j >= it.span[1]) continue;
      var ph = 'iteration';
      if (j >= it.forward[0] && j < it.forward[1]) ph = 'forward';
      else if (j >= it.backward[0] && j < it.backward[1]) ph = 'backward';
      else if (j >= it.optimizer[0] && j < it.optimizer[1]) ph = 'optimizer';
      return 'iteration ' + it.index + ', ' + ph;
    }
    return its.length ? 'outside the iterations' : '';
  }
  Model.prototype.where = function (j) { return where(this.meta, j); };

  // RemoteModel is a timeline memscan view keeps on its side: a trace too large to send whole. The page asks it
  // for each zoom's per-column extremes (env) and for each hovered moment (at); the same View draws both kinds.
  function RemoteModel(meta, src) {
    this.meta = meta; this.src = src; this.remote = true;
    this.n = meta.events; this.m = 0; this.C = meta.categories.length; this.time = null;
    this.peak = meta.peak_bytes; this.peakAt = Math.max(0, meta.peak_event);
    this.whatIfEv = meta.what_if ? [0] : [];
  }
  RemoteModel.prototype.get = function (q) {
    return fetch(this.src + '/' + q).then(function (r) {
      if (!r.ok) throw new Error('the server answered ' + r.status + ' for ' + q);
      return r.json();
    });
  };
  RemoteModel.prototype.moment = function (j) { return this.get('at?event=' + j); };
  RemoteModel.prototype.where = function (j) { return where(this.meta, j); };
  RemoteModel.prototype.stackAt = function (c, out) { out.set(c.cats); };

  var PHASE_FILL = { forward: 'rgba(44,160,44,0.10)', backward: 'rgba(255,127,14,0.10)', optimizer: 'rgba(148,103,189,0.13)' };
  var PAD = { l: 70, r: 12, t: 24, b: 30 };

  function niceStep(span, target) {
    var raw = span / target, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  }
  function byteStep(maxv) {
    var unit = 1;
    while (maxv / unit >= 1024 && unit < Math.pow(1024, 5)) unit *= 1024;
    return niceStep(maxv / unit, 5) * unit;
  }

  // View: one device's chart, its controls and its hover panel.
  function View(root, model) {
    this.root = root; this.m = model;
    this.mode = 'event';
    this.x0 = 0; this.x1 = model.n;
    var bar = el('div', 'tl-bar');
    var self = this;
    this.modeSel = el('select', 'tl-mode');
    [['event', 'x: allocation events'], ['time', 'x: time']].forEach(function (o) {
      var op = el('option', '', o[1]); op.value = o[0];
      if (o[0] === 'time' && !model.time) op.disabled = true;
      self.modeSel.appendChild(op);
    });
    this.modeSel.onchange = function () { self.setMode(self.modeSel.value); };
    var reset = el('button', 'tl-reset', 'reset zoom');
    reset.onclick = function () { self.reset(); };
    var peakBtn = el('button', 'tl-peak', 'zoom to the peak');
    peakBtn.onclick = function () { self.zoomEvents(Math.max(0, model.peakAt - 2000), Math.min(model.n, model.peakAt + 2000)); self.hover(model.peakAt, true); };
    this.range = el('span', 'tl-range');
    bar.appendChild(this.modeSel); bar.appendChild(reset); bar.appendChild(peakBtn); bar.appendChild(this.range);
    bar.appendChild(el('span', 'tl-help', 'drag or Ctrl+wheel to zoom · double-click to reset · click to pin the details'));
    root.appendChild(bar);
    var wrap = el('div', 'tl-wrap');
    this.canvas = el('canvas', 'tl-canvas'); this.over = el('canvas', 'tl-over');
    this.sel = el('div', 'tl-sel');
    wrap.appendChild(this.canvas); wrap.appendChild(this.over); wrap.appendChild(this.sel);
    root.appendChild(wrap);
    this.legend = el('div', 'tl-legend');
    root.appendChild(this.legend);
    this.info = el('div', 'tl-info');
    root.appendChild(this.info);
    this.tree = el('details', 'tl-tree');
    this.tree.appendChild(el('summary', '', 'Call tree of the memory live at the peak (bytes by stack frame, outermost first)'));
    this.tree.addEventListener('toggle', function () { if (self.tree.open && !self.treeBuilt) { self.treeBuilt = true; self.buildTree(); } });
    if (!model.remote) root.appendChild(this.tree);
    this.wrap = wrap;
    this.order = this.categoryOrder();
    this.buildLegend();
    this.bind();
    this.resize();
  }
  View.prototype.categoryOrder = function () {
    var m = this.m, v = new Float64Array(m.C), idx = [];
    if (m.remote) v.set(m.meta.peak_categories); else m.catsAt(m.peakAt, v);
    for (var c = 0; c < m.C; c++) idx.push(c);
    idx.sort(function (a, b) { return v[b] - v[a] || a - b; });
    return idx;
  };
  View.prototype.buildLegend = function () {
    var m = this.m, lg = this.legend;
    function item(color, name, line) {
      var s = el('span', 'tl-key');
      var sw = el('i', line ? 'tl-swline' : 'tl-sw'); sw.style.background = color;
      s.appendChild(sw); s.appendChild(document.createTextNode(name)); lg.appendChild(s);
    }
    item('#222', 'allocated (min–max per pixel)', true);
    item('#c0392b', 'reserved', true);
    if (m.whatIfEv.length) item('#2ca02c', 'reserved, what-if ' + (m.meta.what_if || ''), true);
    if (m.remote) lg.appendChild(el('span', 'tl-key', '(served by memscan view: each zoom is fetched from it)'));
    this.order.forEach(function (c) { item(m.meta.colors[c], m.meta.categories[c]); });
  };
  View.prototype.bind = function () {
    var self = this, o = this.over, drag = null, moved = false;
    function px(ev) { var r = o.getBoundingClientRect(); return ev.clientX - r.left; }
    o.addEventListener('mousedown', function (ev) { drag = px(ev); moved = false; ev.preventDefault(); });
    window.addEventListener('mousemove', function (ev) {
      if (drag === null) return;
      var x = px(ev);
      if (Math.abs(x - drag) > 3) moved = true;
      var a = Math.max(PAD.l, Math.min(drag, x)), b = Math.min(self.w - PAD.r, Math.max(drag, x));
      self.sel.style.display = moved ? 'block' : 'none';
      self.sel.style.left = a + 'px'; self.sel.style.width = (b - a) + 'px';
    });
    window.addEventListener('mouseup', function (ev) {
      if (drag === null) return;
      var x = px(ev), a = Math.min(drag, x), b = Math.max(drag, x);
      drag = null; self.sel.style.display = 'none';
      if (moved && b - a > 3) { self.zoomPx(a, b); return; }
      self.pinned = !self.pinned;
      self.root.classList.toggle('tl-pinned', self.pinned);
      self.hoverPx(x, true);
    });
    o.addEventListener('mousemove', function (ev) {
      if (drag !== null || self.pinned) return;
      var x = px(ev);
      if (self.raf) return;
      self.raf = requestAnimationFrame(function () { self.raf = 0; self.hoverPx(x, false); });
    });
    // Ctrl (or ⌘) and the wheel zoom around the pointer; the wheel alone scrolls the page as usual.
    o.addEventListener('wheel', function (ev) {
      if (!ev.ctrlKey && !ev.metaKey) return;
      ev.preventDefault();
      var f = self.full(), x = self.xAt(px(ev)), k = ev.deltaY > 0 ? 1.25 : 0.8;
      var x0 = Math.max(f[0], x - (x - self.x0) * k), x1 = Math.min(f[1], x + (self.x1 - x) * k);
      if (x1 - x0 >= (self.mode === 'time' ? 1 : 4)) { self.x0 = x0; self.x1 = x1; self.draw(); }
    }, { passive: false });
    o.addEventListener('dblclick', function (ev) { ev.preventDefault(); self.pinned = false; self.root.classList.remove('tl-pinned'); self.reset(); });
    window.addEventListener('resize', function () { self.resize(); });
  };
  View.prototype.resize = function () {
    var w = Math.max(320, this.wrap.clientWidth), h = 360, d = window.devicePixelRatio || 1;
    this.w = w; this.h = h; this.dpr = d;
    [this.canvas, this.over].forEach(function (c) {
      c.width = Math.round(w * d); c.height = Math.round(h * d); c.style.width = w + 'px'; c.style.height = h + 'px';
    });
    this.draw();
  };
  View.prototype.setMode = function (mode) {
    this.mode = mode; this.modeSel.value = mode;
    this.reset();
  };
  View.prototype.full = function () {
    var m = this.m;
    if (this.mode === 'time') return [m.time[0], m.time[m.n - 1] + 1];
    return [0, m.n];
  };
  View.prototype.reset = function () { var f = this.full(); this.x0 = f[0]; this.x1 = f[1]; this.draw(); };
  View.prototype.zoomPx = function (a, b) {
    var x0 = this.xAt(Math.max(a, PAD.l)), x1 = this.xAt(Math.min(b, this.w - PAD.r));
    var minSpan = this.mode === 'time' ? 1 : 4;
    if (x1 - x0 < minSpan) { var c = (x0 + x1) / 2; x0 = c - minSpan / 2; x1 = c + minSpan / 2; }
    this.x0 = x0; this.x1 = x1; this.draw();
  };
  View.prototype.zoomEvents = function (a, b) {
    if (this.mode === 'time') { this.x0 = this.m.time[a]; this.x1 = this.m.time[Math.min(b, this.m.n - 1)] + 1; }
    else { this.x0 = a; this.x1 = b; }
    this.draw();
  };
  View.prototype.plotW = function () { return this.w - PAD.l - PAD.r; };
  View.prototype.xAt = function (px) { return this.x0 + (px - PAD.l) / this.plotW() * (this.x1 - this.x0); };
  View.prototype.pxOf = function (x) { return PAD.l + (x - this.x0) / (this.x1 - this.x0) * this.plotW(); };
  // eventOf maps an x value to the event whose state is drawn there (the last event at or before it).
  View.prototype.eventOf = function (x) {
    var m = this.m, j;
    if (this.mode === 'time') j = m.eventAtTime(x + 1) - 1; else j = Math.floor(x);
    return Math.max(0, Math.min(m.n - 1, j));
  };
  View.prototype.xOfEvent = function (j) { return this.mode === 'time' ? this.m.time[Math.max(0, Math.min(this.m.n - 1, j))] : j; };
  // columns computes each pixel column's events and extremes.
  View.prototype.columns = function () {
    var m = this.m, W = Math.floor(this.plotW()), cols = [], o = {};
    for (var c = 0; c < W; c++) {
      var xa = this.xAt(PAD.l + c), xb = this.xAt(PAD.l + c + 1), a, b;
      if (this.mode === 'time') { a = m.eventAtTime(xa); b = m.eventAtTime(xb); }
      else { a = Math.ceil(xa); b = Math.ceil(xb); }
      a = Math.max(0, a); b = Math.min(m.n, b);
      if (b <= a) { var j = this.eventOf(xa); if (xa < this.xOfEvent(0) && this.mode === 'time') { cols.push(null); continue; } a = j; b = j + 1; }
      if (a >= m.n) { cols.push(null); continue; }
      m.range(a, b, o);
      cols.push({ a: a, b: b, amin: o.amin, amax: o.amax, arg: o.arg, rmin: o.rmin, rmax: o.rmax });
    }
    return cols;
  };
  // remoteColumns asks memscan view for the columns of the current range, one bucket per pixel column.
  View.prototype.remoteColumns = function () {
    var m = this.m, W = Math.floor(this.plotW()), a = Math.max(0, Math.floor(this.x0)), b = Math.min(m.n, Math.ceil(this.x1));
    var self = this, span = this.x1 - this.x0;
    return m.get('env?from=' + a + '&to=' + b + '&n=' + W).then(function (e) {
      var cols = [], k = 0;
      for (var c = 0; c < W; c++) {
        // The column's events; a bucket narrower than a column fills the columns it covers.
        var ea = self.x0 + c / W * span, eb = self.x0 + (c + 1) / W * span;
        while (k + 1 < e.start.length && e.start[k + 1] <= Math.floor(ea)) k++;
        if (ea >= m.n || k >= e.start.length) { cols.push(null); continue; }
        var q = k, amin = e.amin[k], amax = e.amax[k], arg = e.peak[k], rmax = e.rmax[k], rend = e.rend[k], wif = e.wif ? e.wif[k] : 0;
        while (q + 1 < e.start.length && e.start[q + 1] < eb) {
          q++;
          amin = Math.min(amin, e.amin[q]); rmax = Math.max(rmax, e.rmax[q]); rend = e.rend[q]; if (e.wif) wif = e.wif[q];
          if (e.amax[q] > amax) { amax = e.amax[q]; arg = e.peak[q]; }
        }
        var best = k;
        for (var z = k; z <= q; z++) if (e.peak[z] === arg) best = z;
        var cats = new Float64Array(m.C);
        for (var ci = 0; ci < m.C; ci++) cats[ci] = e.cats[ci][best];
        cols.push({ a: e.start[k], b: q + 1 < e.start.length ? e.start[q + 1] : e.to, amin: amin, amax: amax, arg: arg, rmin: rend, rmax: rmax, wif: wif, cats: cats });
      }
      return cols;
    });
  };
  View.prototype.draw = function () {
    var self = this, seq = (this.seq = (this.seq || 0) + 1);
    var t0 = performance.now();
    var got = this.m.remote ? this.remoteColumns() : Promise.resolve(this.columns());
    this.drawn = got.then(function (cols) {
      if (seq === self.seq) self.render(cols, t0); // a later zoom already asked for its own columns
    });
    return this.drawn;
  };
  View.prototype.render = function (cols, t0) {
    var m = this.m, ctx = this.canvas.getContext('2d'), d = this.dpr, W = this.w, H = this.h;
    ctx.setTransform(d, 0, 0, d, 0, 0);
    ctx.clearRect(0, 0, W, H);
    var ymax = 1, k, c;
    var wi = m.whatIfEv.length > 0;
    for (k = 0; k < cols.length; k++) {
      if (!(c = cols[k])) continue;
      if (wi && c.wif === undefined) c.wif = m.whatIfAt(c.b - 1) || 0;
      ymax = Math.max(ymax, c.amax, c.rmax, wi ? c.wif : 0);
    }
    ymax *= 1.08;
    var top = PAD.t, bottom = H - PAD.b, ph = bottom - top, self = this;
    function y(v) { return bottom - v / ymax * ph; }
    this.yOf = y; this.cols = cols;
    // Iteration and phase bands, behind everything.
    ctx.font = '11px system-ui, sans-serif';
    var lastLabel = -1e9;
    m.meta.iterations.forEach(function (it) {
      ['forward', 'backward', 'optimizer'].forEach(function (p) {
        var s = it[p];
        if (s[0] < 0 || s[1] <= s[0]) return;
        var xa = Math.max(PAD.l, self.pxOf(self.xOfEvent(s[0]))), xb = Math.min(W - PAD.r, self.pxOf(self.xOfEvent(s[1])));
        if (xb <= xa) return;
        ctx.fillStyle = PHASE_FILL[p]; ctx.fillRect(xa, top, xb - xa, ph);
      });
      var xs = self.pxOf(self.xOfEvent(it.span[0]));
      // A boundary line only where iterations are wide enough to tell apart; the bands show the rest.
      if (xs >= PAD.l && xs <= W - PAD.r && self.pxOf(self.xOfEvent(it.span[1])) - xs >= 6) {
        ctx.strokeStyle = 'rgba(0,0,0,0.25)'; ctx.beginPath(); ctx.moveTo(xs + 0.5, top); ctx.lineTo(xs + 0.5, bottom); ctx.stroke();
      }
      var xe = self.pxOf(self.xOfEvent(it.span[1])), lx = Math.max(PAD.l, xs) + 3;
      if (xe - lx > 24 && lx - lastLabel > 40 && lx < W - PAD.r - 20) {
        ctx.fillStyle = '#555'; ctx.fillText('iter ' + it.index, lx, top - 8); lastLabel = lx;
      }
    });
    // The category stack at each column's highest moment, so its top is the column's maximum.
    var C = m.C, vecs = new Float64Array(cols.length * C), v = new Float64Array(C), i;
    for (k = 0; k < cols.length; k++) {
      if (!(c = cols[k])) continue;
      m.stackAt(c, v);
      vecs.set(v, k * C);
    }
    var base = new Float64Array(cols.length);
    for (i = 0; i < this.order.length; i++) {
      var cat = this.order[i];
      ctx.fillStyle = m.meta.colors[cat];
      for (k = 0; k < cols.length; k++) {
        if (!cols[k]) continue;
        var val = vecs[k * C + cat];
        if (val <= 0) continue;
        var y0 = y(base[k]), y1 = y(base[k] + val);
        ctx.fillRect(PAD.l + k, y1, 1, y0 - y1);
        base[k] += val;
      }
    }
    // Reserved as steps, then the what-if, then allocated on top: its min–max per column and a line on the max.
    ctx.lineWidth = 1.5; ctx.strokeStyle = '#c0392b'; ctx.beginPath();
    var started = false;
    for (k = 0; k < cols.length; k++) {
      if (!(c = cols[k])) continue;
      var yr = y(c.rmax);
      if (!started) { ctx.moveTo(PAD.l + k, yr); started = true; } else ctx.lineTo(PAD.l + k, yr);
      ctx.lineTo(PAD.l + k + 1, yr);
    }
    ctx.stroke();
    if (wi) {
      ctx.strokeStyle = '#2ca02c'; ctx.setLineDash([5, 3]); ctx.beginPath(); started = false;
      for (k = 0; k < cols.length; k++) {
        if (!(c = cols[k])) continue;
        var wv = c.wif;
        if (isNaN(wv)) continue;
        if (!started) { ctx.moveTo(PAD.l + k, y(wv)); started = true; } else ctx.lineTo(PAD.l + k, y(wv));
        ctx.lineTo(PAD.l + k + 1, y(wv));
      }
      ctx.stroke(); ctx.setLineDash([]);
    }
    ctx.strokeStyle = '#222'; ctx.lineWidth = 1; ctx.beginPath();
    for (k = 0; k < cols.length; k++) {
      if (!(c = cols[k]) || c.amax - c.amin < ymax / ph) continue;
      ctx.moveTo(PAD.l + k + 0.5, y(c.amin)); ctx.lineTo(PAD.l + k + 0.5, y(c.amax));
    }
    ctx.stroke();
    ctx.lineWidth = 1.5; ctx.beginPath(); started = false;
    for (k = 0; k < cols.length; k++) {
      if (!(c = cols[k])) continue;
      if (!started) { ctx.moveTo(PAD.l + k, y(c.amax)); started = true; } else ctx.lineTo(PAD.l + k, y(c.amax));
      ctx.lineTo(PAD.l + k + 1, y(c.amax));
    }
    ctx.stroke();
    // Marks: the peak and every OOM.
    var pk = m.peakAt, pxp = this.pxOf(this.xOfEvent(pk) + (this.mode === 'event' ? 0.5 : 0));
    if (pxp >= PAD.l && pxp <= W - PAD.r) {
      var yp = y(m.peak);
      ctx.fillStyle = '#c0392b'; ctx.beginPath(); ctx.moveTo(pxp, yp - 2); ctx.lineTo(pxp - 6, yp - 12); ctx.lineTo(pxp + 6, yp - 12); ctx.closePath(); ctx.fill();
      ctx.font = 'bold 12px system-ui, sans-serif';
      var label = 'peak ' + human(m.peak), lw = ctx.measureText(label).width;
      ctx.font = 'bold 12px system-ui, sans-serif';
      var lx = Math.min(Math.max(PAD.l + 2, pxp - lw / 2), W - PAD.r - lw - 4), ly = Math.max(top + 12, yp - 16);
      ctx.lineWidth = 3; ctx.strokeStyle = 'rgba(255,255,255,0.9)'; ctx.strokeText(label, lx, ly); // a halo over the lines
      ctx.fillStyle = '#1d1d1f'; ctx.fillText(label, lx, ly);
      ctx.font = '11px system-ui, sans-serif';
    }
    m.meta.ooms.forEach(function (oom) {
      var xo = self.pxOf(self.xOfEvent(oom.event));
      if (xo < PAD.l || xo > W - PAD.r) return;
      ctx.strokeStyle = '#d62728'; ctx.lineWidth = 2; ctx.setLineDash([4, 3]);
      ctx.beginPath(); ctx.moveTo(xo, top); ctx.lineTo(xo, bottom); ctx.stroke(); ctx.setLineDash([]);
      ctx.fillStyle = '#d62728'; ctx.font = 'bold 11px system-ui, sans-serif';
      ctx.fillText('OOM (' + human(oom.requested) + ')', Math.min(xo + 4, W - PAD.r - 90), top + 12);
      ctx.font = '11px system-ui, sans-serif';
    });
    // Axes.
    ctx.strokeStyle = '#999'; ctx.lineWidth = 1; ctx.fillStyle = '#444'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    var st = byteStep(ymax);
    for (var tv = 0; tv <= ymax; tv += st) {
      var ty = Math.round(y(tv)) + 0.5;
      ctx.beginPath(); ctx.moveTo(PAD.l - 4, ty); ctx.lineTo(PAD.l, ty); ctx.stroke();
      ctx.fillText(human(tv), PAD.l - 6, ty);
    }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    var span = this.x1 - this.x0, xs0 = this.xOfEvent(0);
    var unit = this.mode === 'time' ? 1e6 : 1, xst = Math.max(this.mode === 'time' ? 1 : 1, niceStep(span / unit, 8) * unit);
    if (this.mode === 'event') xst = Math.max(1, Math.round(xst));
    var origin = this.mode === 'time' ? xs0 : 0, lastX = -1e9;
    for (var tx = Math.ceil((this.x0 - origin) / xst) * xst + origin; tx <= this.x1; tx += xst) {
      var px = Math.round(this.pxOf(tx)) + 0.5;
      if (px - lastX < 50) continue;
      lastX = px;
      ctx.beginPath(); ctx.moveTo(px, bottom); ctx.lineTo(px, bottom + 4); ctx.stroke();
      var txt = this.mode === 'time' ? +((tx - origin) / 1e6).toPrecision(6) + ' s' : String(Math.round(tx));
      ctx.fillText(txt, px, bottom + 6);
    }
    ctx.strokeStyle = '#777'; ctx.strokeRect(PAD.l + 0.5, top + 0.5, this.plotW() - 1, ph);
    ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
    var ea = this.eventOf(this.x0), eb = this.eventOf(this.x1);
    this.range.textContent = 'events ' + ea + '–' + eb + ' of ' + m.n;
    this.root.dataset.from = String(ea); this.root.dataset.to = String(eb);
    this.root.dataset.drawMs = (performance.now() - t0).toFixed(1);
    this.drawOverlay();
  };
  View.prototype.drawOverlay = function () {
    var ctx = this.over.getContext('2d'), d = this.dpr;
    ctx.setTransform(d, 0, 0, d, 0, 0);
    ctx.clearRect(0, 0, this.w, this.h);
    if (this.hoverEvent === undefined) return;
    var x = this.pxOf(this.xOfEvent(this.hoverEvent) + (this.mode === 'event' ? 0.5 : 0));
    if (x < PAD.l || x > this.w - PAD.r) return;
    ctx.strokeStyle = 'rgba(0,0,0,0.6)'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, PAD.t); ctx.lineTo(Math.round(x) + 0.5, this.h - PAD.b); ctx.stroke();
    if (this.hoverAlloc === undefined) return;
    var yv = this.yOf(this.hoverAlloc);
    ctx.fillStyle = '#222'; ctx.beginPath(); ctx.arc(x, yv, 3.5, 0, 2 * Math.PI); ctx.fill();
  };
  // hoverPx shows the moment under pixel x: the highest event of its column, so a spike is what one reads.
  View.prototype.hoverPx = function (x, force) {
    var k = Math.floor(x - PAD.l);
    if (!this.cols || k < 0 || k >= this.cols.length || !this.cols[k]) return;
    this.hover(this.cols[k].arg, force);
  };
  View.prototype.hover = function (j, force) {
    if (j === this.hoverEvent && !force) return;
    this.hoverEvent = j;
    this.hoverAlloc = undefined; // until the moment's numbers are in
    this.drawOverlay();
    this.showMoment(j);
  };
  View.prototype.showMoment = function (j) {
    var self = this;
    this.m.moment(j).then(function (mo) {
      if (self.hoverEvent !== j) return; // the mouse moved on
      self.hoverAlloc = mo.allocated;
      self.drawOverlay();
      self.renderMoment(mo);
    });
  };
  View.prototype.renderMoment = function (mo) {
    var m = this.m, info = this.info, self = this, j = mo.event;
    info.textContent = '';
    var head = el('div', 'tl-moment');
    var parts = ['event ' + j];
    if (mo.time !== null && mo.time !== undefined) parts.push((mo.time / 1e6).toFixed(6) + ' s after the first event');
    var wh = m.where(j);
    if (wh) parts.push(wh);
    head.appendChild(el('b', '', parts.join(' · ')));
    var vals = el('div', 'tl-vals');
    vals.appendChild(el('span', '', 'allocated ' + human(mo.allocated) + ' (' + exact(mo.allocated) + ' B)'));
    vals.appendChild(el('span', '', 'reserved ' + human(mo.reserved)));
    if (mo.whatif !== null && mo.whatif !== undefined) vals.appendChild(el('span', '', 'what-if reserved ' + human(mo.whatif)));
    if (j === m.peakAt) vals.appendChild(el('span', 'tl-peakmark', 'the peak'));
    head.appendChild(vals);
    info.appendChild(head);
    if (!mo.blocks.length) { info.appendChild(el('p', '', 'nothing live')); return; }
    var tb = el('table', 'tl-blocks'), tr = el('tr');
    ['size', 'category', 'site', 'allocated at', 'freed at'].forEach(function (h) { tr.appendChild(el('th', '', h)); });
    tb.appendChild(tr);
    var detail = el('div', 'tl-detail');
    mo.blocks.forEach(function (b, r) {
      var row = el('tr', 'tl-block');
      row.appendChild(el('td', 'num', human(b.size)));
      row.appendChild(el('td', '', b.category));
      var siteCell = el('td', 'site', b.site);
      siteCell.title = b.site;
      row.appendChild(siteCell);
      row.appendChild(el('td', 'num', b.start < 0 ? 'before the trace' : 'event ' + b.start));
      row.appendChild(el('td', 'num', b.end >= m.n ? 'still live' : 'event ' + b.end));
      row.onclick = function () { self.showBlock(detail, b); };
      tb.appendChild(row);
      if (r === 0) self.showBlock(detail, b);
    });
    var split = el('div', 'tl-split'), left = el('div');
    left.appendChild(el('div', 'tl-caption', 'Largest blocks live at this moment (click one for its stack):'));
    left.appendChild(tb);
    split.appendChild(left); split.appendChild(detail);
    info.appendChild(split);
  };
  View.prototype.showBlock = function (box, b) {
    box.textContent = '';
    box.appendChild(el('b', '', human(b.size) + ' requested (' + exact(b.size) + ' B) · ' + b.category + ' · decided by ' + b.reason));
    if (!b.frames.length) { box.appendChild(el('div', 'frame-none', 'no stack recorded for this block')); return; }
    var ol = el('ol', 'tl-stack');
    b.frames.forEach(function (f) { ol.appendChild(el('li', 'frame', f)); });
    box.appendChild(ol);
  };

  // buildTree groups the blocks live at the peak by their stacks, outermost frame first, into nested lists that
  // open on demand; each node shows its bytes and share of the peak.
  View.prototype.buildTree = function () {
    var m = this.m, j = m.peakAt, rootNode = { name: 'all', bytes: 0, kids: {} };
    for (var b = 0; b < m.m; b++) {
      if (!(m.start[b] <= j && j < m.end[b])) continue;
      var fr = m.stackFrames(b), node = rootNode;
      node.bytes += m.size[b];
      if (!fr.length) fr = ['<no stack recorded> (' + m.meta.categories[m.cat[b]] + ')'];
      for (var k = fr.length - 1; k >= 0; k--) {
        var kid = node.kids[fr[k]];
        if (!kid) kid = node.kids[fr[k]] = { name: fr[k], bytes: 0, kids: {} };
        kid.bytes += m.size[b];
        node = kid;
      }
    }
    var total = rootNode.bytes;
    function list(node, into) {
      var kids = Object.keys(node.kids).map(function (k) { return node.kids[k]; });
      kids.sort(function (a, b) { return b.bytes - a.bytes; });
      var ul = el('ul', 'tl-treelist');
      kids.slice(0, 25).forEach(function (kid) {
        var li = el('li');
        li.dataset.bytes = String(kid.bytes);
        var label = human(kid.bytes) + ' · ' + (kid.bytes * 100 / total).toFixed(1) + ' % · ' + kid.name;
        if (Object.keys(kid.kids).length === 0) { li.appendChild(el('span', 'frame', label)); }
        else {
          var d = el('details'), sm = el('summary', 'frame', label);
          d.appendChild(sm);
          d.addEventListener('toggle', function () { if (d.open && !d.built) { d.built = true; list(kid, d); } });
          li.appendChild(d);
        }
        ul.appendChild(li);
      });
      if (kids.length > 25) ul.appendChild(el('li', 'more', (kids.length - 25) + ' more frames'));
      into.appendChild(ul);
    }
    this.tree.appendChild(el('p', 'tl-caption', human(total) + ' live after event ' + j + ' (the peak).'));
    list(rootNode, this.tree);
  };

  // Sortable, filterable tables: click a header to sort (by data-value when a cell has one), type to filter rows.
  function tables() {
    var list = document.querySelectorAll('table.sortable');
    Array.prototype.forEach.call(list, function (t) {
      var input = el('input', 'tfilter'); input.type = 'search'; input.placeholder = 'filter rows';
      t.parentNode.insertBefore(input, t);
      var rows = function () { return Array.prototype.slice.call(t.querySelectorAll('tr')).filter(function (r) { return r.querySelector('td'); }); };
      input.oninput = function () {
        var q = input.value.toLowerCase();
        rows().forEach(function (r) { r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none'; });
      };
      var ths = t.querySelectorAll('th');
      Array.prototype.forEach.call(ths, function (th, col) {
        th.classList.add('sorter');
        th.onclick = function () {
          var dir = th.dataset.dir === 'desc' ? 1 : -1;
          Array.prototype.forEach.call(ths, function (h) { delete h.dataset.dir; });
          th.dataset.dir = dir < 0 ? 'desc' : 'asc';
          var rs = rows(), parent = rs.length ? rs[0].parentNode : null;
          function key(r) {
            var td = r.children[col];
            if (!td) return '';
            var v = td.dataset.sort !== undefined ? td.dataset.sort : td.dataset.value !== undefined ? td.dataset.value : td.textContent.trim();
            var f = parseFloat(v);
            return isNaN(f) || !/^-?[\d.]+(e[+-]?\d+)?$/i.test(v) ? v.toLowerCase() : f;
          }
          rs.sort(function (a, b) {
            var x = key(a), y = key(b);
            if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir;
            return String(x) < String(y) ? -dir : String(x) > String(y) ? dir : 0;
          });
          rs.forEach(function (r) { parent.appendChild(r); });
        };
      });
    });
  }

  function start() {
    var t0 = performance.now();
    tables();
    var roots = document.querySelectorAll('.timeline');
    // A page written to a file embeds each timeline; a page served by memscan view fetches it from the server.
    function source(root) {
      if (root.dataset.remote) {
        return fetch(root.dataset.remote + '/meta').then(function (r) {
          if (!r.ok) throw new Error('the server answered ' + r.status + ' for meta');
          return r.json();
        }).then(function (meta) { return [meta, null]; });
      }
      if (!root.dataset.src) {
        return Promise.resolve([JSON.parse(document.getElementById(root.dataset.meta).textContent),
          document.getElementById(root.dataset.blob).textContent.trim()]);
      }
      function get(part) {
        return fetch(root.dataset.src + '/' + part).then(function (r) {
          if (!r.ok) throw new Error('the server answered ' + r.status + ' for ' + part);
          return r.text();
        });
      }
      return Promise.all([get('meta').then(JSON.parse), get('data')]);
    }
    function load(root) {
      var meta, tA, tB;
      return source(root).then(function (got) {
        meta = got[0];
        if (got[1] === null) return null;
        tA = performance.now();
        var raw = b64bytes(got[1].trim());
        tB = performance.now();
        return inflate(raw);
      }).then(function (bytes) {
        var tC = performance.now();
        var model = bytes === null ? new RemoteModel(meta, root.dataset.remote) : new Model(meta, bytes);
        var tD = performance.now();
        root.dataset.timing = 'base64 ' + (tB - tA).toFixed(0) + ' ms, inflate ' + (tC - tB).toFixed(0) + ' ms, model ' + (tD - tC).toFixed(0) + ' ms';
        root.dataset.peak = String(model.peak);
        root.dataset.events = String(model.n);
        root.view = new View(root, model);
        return root.view.drawn;
      }).catch(function (err) {
        root.appendChild(el('p', 'warn', 'The timeline could not be drawn: ' + err.message));
        throw err;
      });
    }
    function done() {
      document.body.dataset.ready = '1';
      document.body.dataset.loadMs = (performance.now() - t0).toFixed(1);
    }
    // Each timeline is decoded and drawn when it comes near the screen: a page of many inputs draws the ones in
    // view first and the others as the reader scrolls. The page is ready once those in view at load are drawn.
    if (!roots.length || !window.IntersectionObserver) {
      Promise.all(Array.prototype.map.call(roots, load)).then(done);
      return;
    }
    var first = true;
    var io = new IntersectionObserver(function (entries) {
      var now = [];
      entries.forEach(function (e) {
        if (!e.isIntersecting || e.target.loading) return;
        e.target.loading = load(e.target);
        io.unobserve(e.target);
        now.push(e.target.loading);
      });
      if (first) { first = false; Promise.all(now).then(done); }
    }, { rootMargin: '400px 0px' });
    Array.prototype.forEach.call(roots, function (r) {
      r.style.minHeight = '460px'; // room for the chart before it is drawn, so the page does not jump
      io.observe(r);
    });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
