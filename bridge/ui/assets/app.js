// toolbridge status page. Everything shown here that came from an upstream
// server (names, descriptions, errors, schemas) is attacker-controlled:
// the DOM is built with createElement and textContent only, never from
// HTML strings, and the page's CSP forbids inline script anyway.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const MAX_FEED = 50;
  let state = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  const fmt = (n) => Number(n || 0).toLocaleString('en-US');
  const plural = (n, word) => fmt(n) + ' ' + word + (n === 1 ? '' : 's');
  function clock(t) {
    const d = new Date(t);
    return isNaN(d) ? '' : d.toLocaleTimeString([], { hour12: false });
  }
  function ms(v) {
    if (v >= 1000) return (v / 1000).toFixed(2) + ' s';
    if (v >= 10) return Math.round(v) + ' ms';
    return v.toFixed(1) + ' ms';
  }

  // traceLink returns a link to the trace viewer, or null. The base URL
  // comes from the gateway's config and the id must be 32 hex digits.
  function traceLink(id) {
    if (!state || !state.trace_ui || !/^[0-9a-f]{32}$/.test(id || '')) return null;
    const base = String(state.trace_ui);
    if (!/^https?:\/\//i.test(base)) return null;
    const a = el('a', 'trace', 'trace');
    a.href = base.replace(/\/+$/, '') + '/trace/' + id;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    return a;
  }

  // ---- bridge decision -------------------------------------------------
  function renderDecision(d) {
    const mode = $('mode');
    mode.textContent = d.bridge ? 'bridge mode' : 'pass-through';
    mode.className = 'badge ' + (d.bridge ? 'on' : 'off');
    const saved = d.full_tokens - d.client_tokens;
    const head = $('decision-headline');
    clear(head);
    if (d.bridge && saved > 0) {
      head.append(el('strong', 'big', fmt(saved)), ' tokens saved: the client sees ',
        el('strong', null, fmt(d.client_tokens)), ' of ', el('strong', null, fmt(d.full_tokens)), '.');
    } else {
      head.append('The client sees every tool: ', el('strong', 'big', fmt(d.client_tokens)), ' tokens.');
    }
    $('decision-reason').textContent = 'mode ' + d.mode + ' · ' + d.reason;

    const chart = $('decision-chart');
    clear(chart);
    const W = 600, left = 120, right = 20, barH = 30;
    const max = Math.max(d.full_tokens, d.client_tokens, d.threshold_tokens, 1) * 1.08;
    const x = (v) => left + (W - left - right) * v / max;
    const g = svg('svg', { viewBox: '0 0 ' + W + ' 124', width: '100%', class: 'bars', preserveAspectRatio: 'xMinYMin meet' });
    const rows = [
      { label: 'full list', v: d.full_tokens, cls: 'bar-full' },
      { label: 'client sees', v: d.client_tokens, cls: 'bar-client' },
    ];
    rows.forEach((r, i) => {
      const y = 14 + i * (barH + 16);
      g.append(svg('text', { x: left - 10, y: y + barH / 2 + 5, 'text-anchor': 'end', class: 'lbl' }, r.label));
      g.append(svg('rect', { x: left, y: y, width: Math.max(2, x(r.v) - left), height: barH, rx: 5, class: r.cls }));
      const inside = x(r.v) - left > 110;
      g.append(svg('text', { x: inside ? x(r.v) - 8 : x(r.v) + 6, y: y + barH / 2 + 5, 'text-anchor': inside ? 'end' : 'start', class: inside ? 'val in' : 'val' }, fmt(r.v)));
    });
    if (d.threshold_tokens > 0) {
      const tx = x(d.threshold_tokens);
      g.append(svg('line', { x1: tx, x2: tx, y1: 4, y2: 104, class: 'threshold' }));
      const anchor = tx > W * 0.55 ? 'end' : 'start';
      g.append(svg('text', { x: anchor === 'end' ? tx - 5 : tx + 5, y: 120, 'text-anchor': anchor, class: 'tlbl' },
        'threshold ' + fmt(d.threshold_tokens) + ' (' + d.threshold_pct + '% of ' + fmt(d.context_window) + ')'));
    }
    chart.append(g);

    const stats = $('decision-stats');
    clear(stats);
    const pct = d.full_tokens && d.context_window ? (100 * d.client_tokens / d.context_window).toFixed(1) + '%' : '–';
    for (const [v, label] of [[fmt(d.visible_tools), 'tools listed'], [fmt(d.deferrable_tools), 'deferrable'],
      [pct, 'of context'], [d.tokenizer, 'tokenizer']]) {
      const s = el('div', 'stat');
      s.append(el('b', null, v), el('span', null, label));
      stats.append(s);
    }
  }

  // ---- servers ---------------------------------------------------------
  function renderServers(list) {
    const box = $('servers');
    clear(box);
    const up = list.filter((s) => s.state === 'connected').length;
    $('servers-count').textContent = up + ' of ' + list.length + ' up';
    if (!list.length) box.append(el('p', 'empty', 'No servers configured.'));
    for (const s of list) {
      const row = el('div', 'server');
      row.dataset.state = s.state;
      const top = el('div', 'server-top');
      top.append(el('span', 'dot'), el('span', 'name', s.name), el('span', 'state', s.state));
      row.append(top);
      const facts = el('div', 'facts');
      facts.append(el('span', null, s.transport), el('span', null, plural(s.tools, 'tool')), el('span', null, fmt(s.tokens) + ' tokens'));
      if (s.held) facts.append(el('span', 'warn', s.held + ' held'));
      if (s.reconnects) facts.append(el('span', null, s.reconnects + ' reconnects'));
      row.append(facts);
      if (s.why) row.append(el('div', 'why', s.why));
      if (s.last_error && s.last_error !== s.why) row.append(el('div', 'why', 'last error: ' + s.last_error));
      box.append(row);
    }
  }

  // ---- tools -----------------------------------------------------------
  function toolText(t) {
    return [t.id, t.status, t.class, t.rule, t.trust, (t.annotations || []).join(' '), (t.flags || []).join(' ')].join(' ').toLowerCase();
  }
  function renderTools() {
    if (!state) return;
    const q = $('filter').value.trim().toLowerCase();
    const body = $('tools').tBodies[0];
    clear(body);
    let shown = 0;
    for (const t of state.tools) {
      if (q && !q.split(/\s+/).every((w) => toolText(t).includes(w))) continue;
      shown++;
      const tr = el('tr', 'status-' + t.status);
      tr.tabIndex = 0;
      const name = el('td', 'tool');
      name.append(el('span', 'tname', t.name), el('span', 'tserver', t.server));
      if (t.description) name.append(el('span', 'tdesc', t.description));
      tr.append(name);
      const st = el('td');
      st.append(el('span', 'pill ' + t.status, t.status));
      tr.append(st);
      const cls = el('td', 'cls');
      cls.append(el('span', null, t.class));
      if (t.rule) cls.append(el('span', 'rule', t.rule));
      tr.append(cls);
      tr.append(el('td', 'num', fmt(t.tokens)));
      const hints = el('td', 'hints');
      for (const a of t.annotations || []) hints.append(el('span', 'hint', a));
      tr.append(hints);
      const tr2 = el('td', 'trust');
      if (t.trust) tr2.append(el('span', 'trust-' + t.trust, t.trust));
      if ((t.flags || []).length) tr2.append(el('span', 'flag', '⚑ flagged'));
      tr.append(tr2);
      const open = () => openSchema(t);
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(); });
      body.append(tr);
    }
    $('tools-count').textContent = q ? shown + ' of ' + state.tools.length : String(state.tools.length);
  }
  function openSchema(t) {
    $('schema-title').textContent = t.id;
    let desc = t.description || '';
    if (t.warning) desc += (desc ? '\n\n' : '') + 'warning: ' + t.warning;
    for (const f of t.flags || []) desc += '\n\nsuspicious: ' + f;
    $('schema-desc').textContent = desc;
    $('schema-body').textContent = t.schema ? JSON.stringify(t.schema, null, 2) : '(no schema)';
    const d = $('schema');
    if (typeof d.showModal === 'function') d.showModal(); else d.setAttribute('open', '');
  }

  // ---- held tools ------------------------------------------------------
  function renderHeld(list) {
    $('held-card').hidden = !list.length;
    $('held-count').textContent = String(list.length);
    const box = $('held');
    clear(box);
    for (const h of list) {
      const item = el('div', 'held');
      item.append(el('div', 'held-id', h.id), el('div', 'why', h.reason));
      if (h.diff) {
        const pre = el('pre', 'diff');
        for (const line of h.diff.split('\n')) {
          const mark = line.trimStart();
          const c = mark.startsWith('+') ? 'add' : mark.startsWith('-') ? 'del' : '';
          pre.append(el('span', c, line + '\n'));
        }
        item.append(pre);
      }
      const cmd = el('div', 'approve');
      cmd.append(el('span', 'dim', 'approve with '), el('code', null, h.approve));
      item.append(cmd);
      box.append(item);
    }
  }

  // ---- live activity ---------------------------------------------------
  function push(list, item) {
    list.prepend(item);
    while (list.children.length > MAX_FEED) list.removeChild(list.lastChild);
    $(list.id + '-empty').hidden = true;
  }
  function addCall(c) {
    const li = el('li', c.error ? 'call err' : 'call');
    const top = el('div', 'line');
    top.append(el('span', 'when', clock(c.at)), el('span', 'what', c.tool), el('span', 'lat', ms(c.latency_ms)));
    li.append(top);
    const sub = el('div', 'sub');
    sub.append(el('span', null, c.server));
    if (c.via && c.via !== 'direct') sub.append(el('span', 'via', 'via ' + c.via));
    if (c.caller) sub.append(el('span', 'caller', c.caller));
    const link = traceLink(c.trace_id);
    if (link) sub.append(link);
    li.append(sub);
    if (c.error) li.append(el('div', 'errtext', c.error));
    push($('calls'), li);
  }
  function addSearch(s) {
    const miss = !s.total || s.partial;
    const li = el('li', miss ? 'search miss' : 'search');
    const top = el('div', 'line');
    top.append(el('span', 'when', clock(s.at)), el('span', 'what q', s.query || '(browse)'),
      el('span', 'lat', s.total ? plural(s.total, 'hit') : 'no hit'));
    li.append(top);
    const sub = el('div', 'sub hits');
    if (!s.total) sub.append(el('span', null, 'nothing matched: the catalog lacks these words'));
    else if (s.partial) sub.append(el('span', null, 'no word matched as written; near misses:'));
    for (const h of s.hits || []) sub.append(el('span', 'hit', h));
    if (s.caller) sub.append(el('span', 'caller', s.caller));
    const link = traceLink(s.trace_id);
    if (link) sub.append(link);
    li.append(sub);
    push($('searches'), li);
  }
  function listen() {
    const es = new EventSource('api/events');
    const live = $('live');
    es.addEventListener('open', () => { live.className = 'live on'; });
    es.addEventListener('error', () => { live.className = 'live off'; });
    es.addEventListener('call', (e) => addCall(JSON.parse(e.data)));
    es.addEventListener('search', (e) => addSearch(JSON.parse(e.data)));
  }

  // ---- state -----------------------------------------------------------
  async function refresh() {
    try {
      const r = await fetch('api/state', { cache: 'no-store', credentials: 'same-origin' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      state = await r.json();
      state.tools = state.tools || [];
      renderDecision(state.decision);
      renderServers(state.servers || []);
      renderHeld(state.held || []);
      renderTools();
      $('version').textContent = 'v' + state.version + ' · ' + state.transport;
      $('updated').textContent = 'updated ' + clock(state.at);
      document.body.dataset.ready = 'true';
    } catch (err) {
      $('updated').textContent = 'cannot reach the gateway (' + err.message + ')';
    }
  }

  $('filter').addEventListener('input', renderTools);
  $('schema-close').addEventListener('click', () => $('schema').close());
  refresh();
  setInterval(refresh, 5000);
  listen();
})();
