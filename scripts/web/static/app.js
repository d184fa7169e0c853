/* The kahve web table: set up a match, then play it. The server holds the game; this page only shows what
   the server sends (the person's seat view) and sends back the person's moves. */
"use strict";

const QUERY = new URLSearchParams(location.search);
const FAST = QUERY.get("fast") === "1";          // for tests: no pauses between moves
const SEED = /^\d+$/.test(QUERY.get("seed") || "") ? Number(QUERY.get("seed")) : null;   // for tests: a fixed deal
const PACE = {slow: 1100, normal: 650, quick: 250};

const S = {games: {}, order: [], game: null, check: null, tableId: null, view: null, busy: false, picker: null,
           said: {}, thinking: null, defaultOpponent: null};

const $ = id => document.getElementById(id);
const sleep = ms => new Promise(r => setTimeout(r, ms));
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function setState(s) { document.body.dataset.state = s; }
function sun() { return S.view && S.view.game === "ish"; }
function pretty(name) { return name.replace(/_/g, " "); }

async function api(method, path, body) {
  const opts = {method, headers: {}, credentials: "same-origin"};
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = {error: `the server answered ${res.status}`}; }
  if (!res.ok) {
    const err = new Error(data && data.error || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

/* ------------------------------------------------------------------ setup ---------------------------------- */
async function loadGames() {
  const data = await api("GET", "/api/games");
  const list = $("game-list");
  list.innerHTML = "";
  for (const g of data.games) {
    S.games[g.name] = g;
    S.order.push(g.name);
    const b = el("button", "game-choice");
    b.type = "button";
    b.dataset.game = g.name;
    b.id = "game-" + g.name;
    b.innerHTML = `<span class="game-title">${g.title}</span>`;
    b.addEventListener("click", () => selectGame(g.name));
    list.appendChild(b);
  }
}

const TABLE_SETTINGS = ["players", "partnerships"];

function fieldFor(f) {
  const wrap = el("div", "field");
  const id = "set-" + f.name;
  const lab = el("label", null, f.label || pretty(f.name));
  lab.htmlFor = id;
  let input;
  if (f.kind === "flag") {
    input = el("input");
    input.type = "checkbox";
    input.checked = !!f.default;
    wrap.classList.add("flag");
  } else if (f.kind === "choice") {
    input = el("select");
    for (const o of f.options) {
      const opt = el("option", null, (f.option_labels || {})[String(o)] || pretty(String(o)));
      opt.value = JSON.stringify(o);
      if (o === f.default) opt.selected = true;
      input.appendChild(opt);
    }
  } else if (f.kind === "int" || f.kind === "float") {
    input = el("input");
    input.type = "number";
    input.min = f.min; input.max = f.max;
    input.step = f.kind === "int" ? (f.step || 1) : "any";
    input.value = f.default;
  } else {
    input = el("input");
    input.type = "text";
    input.value = Array.isArray(f.default) ? f.default.join(",") : String(f.default);
  }
  input.id = id;
  input.dataset.setting = f.name;
  input.dataset.kind = f.kind;
  input.addEventListener("change", scheduleCheck);
  if (f.kind !== "flag") input.addEventListener("input", scheduleCheck);
  wrap.title = f.help || "";             // player words (the setting's rule ids are for developers)
  if (f.kind === "flag") { wrap.append(input, lab); } else { wrap.append(lab, input); }
  return wrap;
}

function selectGame(name) {
  S.game = name;
  localStorage.setItem("kahve.game", name);
  for (const b of document.querySelectorAll(".game-choice")) b.classList.toggle("selected", b.dataset.game === name);
  const g = S.games[name];
  $("game-summary").innerHTML = Cards.inline(g.summary_words || g.summary);
  const table = $("table-settings"), house = $("house-settings");
  table.innerHTML = ""; house.innerHTML = "";
  for (const f of g.settings) (TABLE_SETTINGS.includes(f.name) ? table : house).appendChild(fieldFor(f));
  fillOpponents(g.opponents, g.default_opponent);
  check().then(() => { if (!$("rules").hidden && !S.tableId) loadRules(); });
}

function collectSettings() {
  const out = {};
  const g = S.games[S.game];
  for (const f of g.settings) {
    const input = $("set-" + f.name);
    if (!input) continue;
    let v;
    if (f.kind === "flag") v = input.checked;
    else if (f.kind === "choice") v = JSON.parse(input.value);
    else if (f.kind === "int") v = input.value === "" ? f.default : Number(input.value);
    else if (f.kind === "float") v = input.value === "" ? f.default : Number(input.value);
    else v = input.value.trim();
    const dflt = Array.isArray(f.default) ? f.default.join(",") : f.default;
    if (f.kind === "text" ? v !== String(dflt) : v !== f.default) out[f.name] = v;
  }
  return out;
}

function fillOpponents(list, dflt) {
  const sel = $("opponent-select");
  // the person's own pick (on this page, else, on a fresh form, one kept from an earlier match) where it fits this
  // table; else the server's default, which follows the table: the game's trained bot at medium where one fits,
  // else the rule-based player (the default is not a pick: it changes with the table)
  const own = !sel.value ? localStorage.getItem("kahve.opponentPick")
    : sel.value !== S.defaultOpponent ? sel.value : null;
  sel.innerHTML = "";
  let chosen = null;
  for (const o of list) {
    const opt = el("option", null, o.label + (o.fits ? "" : " — does not fit this table"));
    opt.value = o.spec;
    opt.disabled = !o.fits;
    if (!o.fits) opt.title = o.reason || "";
    sel.appendChild(opt);
    if (o.spec === own && o.fits) chosen = o.spec;
  }
  if (!chosen) {
    const first = list.find(o => o.fits && o.spec === dflt) || list.find(o => o.fits && o.spec === "heuristic")
      || list.find(o => o.fits);
    chosen = first ? first.spec : "";
  }
  S.defaultOpponent = dflt;
  sel.value = chosen;
  const unfit = list.filter(o => !o.fits);
  $("opponent-note").textContent = unfit.length
    ? unfit.map(o => `${o.spec}: ${o.reason}`).join("; ") : "";
}

let checkTimer = null;
function scheduleCheck() { clearTimeout(checkTimer); checkTimer = setTimeout(check, 150); }

async function check() {
  const game = S.game;
  const settings = collectSettings();
  let res;
  try { res = await api("POST", "/api/check", {game, settings}); }
  catch (e) { $("setup-error").textContent = e.message; return; }
  if (game !== S.game) return;
  S.check = res;
  $("setup-error").textContent = res.valid ? "" : res.error;
  $("start").disabled = !res.valid || S.busy;
  const partners = $("set-partnerships");
  if (partners) {                         // partnerships mean nothing at a table of 2 (Pişti)
    const two = res.valid && res.players === 2;
    if (two) partners.checked = false;
    partners.disabled = two;
  }
  fillOpponents(res.opponents, res.default_opponent);
  const seatSel = $("seat-select");
  const keep = seatSel.value;
  seatSel.innerHTML = "";
  const n = res.valid ? res.players : 2;
  for (let p = 0; p < n; p++) {
    const opt = el("option", null, `player ${p}`);
    opt.value = p;
    seatSel.appendChild(opt);
  }
  seatSel.value = keep && Number(keep) < n ? keep : "0";
}

async function start() {
  if (S.busy) return;
  $("setup-error").textContent = "";
  const body = {game: S.game, settings: collectSettings(), seat: Number($("seat-select").value || 0),
                opponent: $("opponent-select").value};
  if (SEED !== null) body.seed = SEED;
  // keep a pick the person made; starting on the default forgets an old pick, so the default applies again
  if (body.opponent === S.defaultOpponent) localStorage.removeItem("kahve.opponentPick");
  else localStorage.setItem("kahve.opponentPick", body.opponent);
  S.busy = true;
  setState("busy");
  const btn = $("start");
  btn.disabled = true;                    // one click opens one table (a trained bot may take seconds to load)
  const t0 = performance.now();
  const label = btn.textContent;
  const tick = setInterval(() => { btn.textContent = `Opening the table… ${((performance.now() - t0) / 1000).toFixed(1)} s`; }, 100);
  btn.textContent = "Opening the table…";
  try {
    const answer = await api("POST", "/api/tables", body);
    S.busy = false;
    openTable(answer, null);
  } catch (e) {
    S.busy = false;
    setState("setup");
    $("setup-error").textContent = e.message;
    listTables();
  } finally {
    clearInterval(tick);
    btn.textContent = label;
    btn.disabled = !(S.check && S.check.valid);
  }
}

function showSetup() {
  // the table stays on the server (and in the list below): choosing another game abandons nothing
  $("setup").hidden = false;
  $("table").hidden = true;
  $("to-setup").hidden = true;
  $("deal-end").hidden = true;
  $("match-end").hidden = true;
  sessionStorage.removeItem("kahve.table");
  setTableInUrl(null);
  S.tableId = null;
  S.view = null;
  setState("setup");
  listTables();
}

function setTableInUrl(id) {
  const q = new URLSearchParams(location.search);
  if (id) q.set("table", id); else q.delete("table");
  const qs = q.toString();
  history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
}

/* the session's tables that the server still holds, to go back to one (after a reload, or another game) */
async function listTables() {
  let data;
  try { data = await api("GET", "/api/tables"); } catch (e) { return; }
  const list = $("table-list");
  list.innerHTML = "";
  for (const t of data.tables) {
    const li = el("li", "my-table" + (t.over ? " over" : ""));
    li.dataset.table = t.table;
    li.appendChild(el("span", "what", `${t.title}, ${t.players} players, against ${t.opponent}: ${t.where}`));
    const back = el("button", "resume", t.over ? "Look" : "Back to the table");
    back.type = "button";
    back.addEventListener("click", () => resume(t.table));
    const close = el("button", "close ghost-dark", "Close");
    close.type = "button";
    close.title = "end this match and free its place";
    close.addEventListener("click", async () => {
      if (!t.over && !(await confirmDialog(`Close your ${t.title} match? It cannot be continued afterwards.`,
                                           "Close the match"))) return;
      try { await api("DELETE", `/api/tables/${t.table}`); } catch (e) { /* gone already */ }
      listTables();
    });
    li.append(back, close);
    list.appendChild(li);
  }
  $("my-tables").hidden = !data.tables.length;
}

async function resume(id) {
  try {
    const a = await api("GET", `/api/tables/${id}`);
    openTable(a, a.log);
  } catch (e) {
    $("setup-error").textContent = e.message;
    listTables();
  }
}

/* a yes/no question on the page (no browser dialog): resolves true for yes */
function confirmDialog(text, yes) {
  $("confirm-text").textContent = text;
  $("confirm-yes").textContent = yes;
  $("confirm").hidden = false;
  $("confirm-no").focus();
  return new Promise(resolve => {
    const done = answer => () => {
      $("confirm").hidden = true;
      $("confirm-yes").onclick = $("confirm-no").onclick = null;
      resolve(answer);
    };
    $("confirm-yes").onclick = done(true);
    $("confirm-no").onclick = done(false);
  });
}

/* ------------------------------------------------------------------ the table ------------------------------ */
function openTable(answer, log) {
  S.tableId = answer.table;
  sessionStorage.setItem("kahve.table", answer.table);
  setTableInUrl(answer.table);            // a reload, a bookmark or the browser's history find the table again
  $("setup").hidden = true;
  $("table").hidden = false;
  $("to-setup").hidden = false;
  $("match-end").hidden = true;
  $("deal-end").hidden = true;
  $("log").innerHTML = "";
  $("record").hidden = true;
  S.said = {};
  S.view = answer.view;
  document.body.dataset.game = answer.view.game;
  if (log) {
    for (const e of log) addLog(e);
    render(answer.view, true);
    finish(answer.view);
  } else {
    play(answer.events, answer.view);
  }
}

function delayFor(count) {
  if (FAST) return 0;
  const pace = PACE[$("speed").value] || PACE.normal;
  return Math.min(pace, Math.max(60, 5000 / Math.max(count, 1)));
}

async function play(events, finalView) {
  S.busy = true;
  setState("busy");
  for (const ev of events) {
    const wait = delayFor(ev.entries.length);
    for (const entry of ev.entries) {
      addLog(entry);
      say(entry);
      if (wait) await sleep(wait);
    }
    // a deal's last move leaves the engine already dealing the next one: its scoring is shown over the table as
    // it was, and the next deal appears only once the panel is closed
    if (ev.deal_end) await showDealEnd(ev.deal_end);
    render(ev.view, false);
  }
  render(finalView, true);
  S.busy = false;
  finish(finalView);
}

function finish(view) {
  if (view.over) {
    setState("over");
    showMatchEnd(view);
  } else {
    setState(view.your_turn ? "ready" : "waiting");
  }
}

async function sendMove(move) {
  if (S.busy || !S.view || !S.view.your_turn) return;
  closePicker();
  S.busy = true;
  setState("busy");
  $("move-error").textContent = "";
  for (const m of document.querySelectorAll(".move")) m.classList.add("inert");
  startThinking(S.view);
  try {
    const answer = await api("POST", `/api/tables/${S.tableId}/move`,
                             {actions: move.actions, seat: S.view.seat, step: S.view.step});
    stopThinking();
    await play(answer.events, answer.view);
  } catch (e) {
    stopThinking();
    S.busy = false;
    $("move-error").textContent = e.message;
    if (e.status === 404 || e.status === 410) { setState("lost"); return; }
    try { const a = await api("GET", `/api/tables/${S.tableId}`); await play(a.events, a.view); }
    catch (e2) { setState("lost"); }
  }
}

async function newMatch() {
  if (S.busy || !S.tableId) return;
  if (S.view && !S.view.over && !(await confirmDialog(
      "Start a new match at this table? The match in progress will be lost.", "Start a new match"))) return;
  S.busy = true;
  setState("busy");
  try {
    const answer = await api("POST", `/api/tables/${S.tableId}/new`, {});
    S.busy = false;
    openTable(answer, null);
  } catch (e) {
    S.busy = false;
    $("move-error").textContent = e.message;
    if (e.status === 404 || e.status === 410) showSetup();
  }
}

/* ------------------------------------------------------------------ thinking ------------------------------- */
/* while the server plays the bots' moves (seconds against a search), the page says so and counts the time */
function startThinking(view) {
  stopThinking();
  const t0 = performance.now();
  const who = view.players === 2 ? "Your opponent is thinking…" : "The other players are thinking…";
  const tick = () => { $("thinking-time").textContent = `${((performance.now() - t0) / 1000).toFixed(1)} s`; };
  $("thinking-text").textContent = who;
  tick();
  // shown after a moment only: most answers come back at once, and a flash of it would only distract
  const show = setTimeout(() => {
    $("thinking").hidden = false;
    document.body.dataset.thinking = "1";
    for (const b of document.querySelectorAll("#opponents .seat-box")) b.classList.add("thinking");
  }, FAST ? 0 : 300);
  S.thinking = {show, timer: setInterval(tick, 100)};
}

function stopThinking() {
  if (!S.thinking) return;
  clearTimeout(S.thinking.show);
  clearInterval(S.thinking.timer);
  S.thinking = null;
  $("thinking").hidden = true;
  delete document.body.dataset.thinking;
  for (const b of document.querySelectorAll(".seat-box.thinking")) b.classList.remove("thinking");
}

/* ------------------------------------------------------------------ how to play ---------------------------- */
/* the player guide (what the terminal's "?" prints) with the house settings in force, at any moment */
function rich(text) {
  return Cards.inline(text).replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>").replace(/\*([^*]+)\*/g, "<em>$1</em>");
}

async function loadRules() {
  let g;
  try {
    g = S.tableId ? await api("GET", `/api/tables/${S.tableId}/guide`)
                  : await api("POST", "/api/guide", {game: S.game, settings: S.check && S.check.valid ? collectSettings() : {}});
  } catch (e) {
    g = {title: "How to play", blocks: [{kind: "p", text: e.message}]};
  }
  $("rules-title").textContent = g.title;
  const body = $("rules-body");
  body.innerHTML = "";
  let list = null;
  for (const b of g.blocks) {
    if (b.kind === "li") {
      if (!list) { list = el("ul"); body.appendChild(list); }
      const li = el("li");
      li.innerHTML = rich(b.text);
      list.appendChild(li);
      continue;
    }
    list = null;
    const e = el(b.kind === "h2" ? "h3" : "p");
    e.innerHTML = rich(b.text);
    body.appendChild(e);
  }
  $("rules").dataset.game = g.game;
}

async function toggleRules(open) {
  const panel = $("rules");
  if (open === undefined) open = panel.hidden;
  if (!open) { panel.hidden = true; document.body.classList.remove("rules-open"); return; }
  await loadRules();
  panel.hidden = false;
  document.body.classList.add("rules-open");
  $("rules-close").focus();
}

/* ------------------------------------------------------------------ the log -------------------------------- */
function addLog(entry) {
  const li = el("li", entry.forced ? "forced" : "");
  li.dataset.seat = entry.seat === null ? "" : entry.seat;
  li.dataset.deal = entry.deal;
  const s = sun();
  if (entry.seat !== null && entry.seat !== undefined) {
    const who = el("b", entry.seat === (S.view && S.view.seat) ? "me" : "", entry.who + ": ");
    li.appendChild(who);
  }
  const t = el("span", "text");
  t.innerHTML = Cards.inline(entry.text, s);
  li.appendChild(t);
  if (entry.forced && entry.seat !== null && !/\((only choice|last card)\)$/.test(entry.text)) li.appendChild(el("span", "tag", "auto"));
  if (entry.seat === null) li.classList.add("event");
  const log = $("log");
  log.appendChild(li);
  log.scrollTop = log.scrollHeight;
}

function say(entry) {
  if (entry.seat !== null) S.said[entry.seat] = entry.text;     // kept under the seat's name until its next move
  const box = entry.seat === null ? $("table-said") : document.querySelector(`.seat-box[data-seat="${entry.seat}"] .said`);
  if (!box) return;
  box.innerHTML = Cards.inline(entry.text, sun());
  box.classList.remove("flash");
  void box.offsetWidth;
  box.classList.add("flash");
}

/* ------------------------------------------------------------------ rendering ------------------------------ */
function render(view, interactive) {
  S.view = view;
  closePicker();
  const moves = interactive && view.your_turn ? view.moves : [];
  renderScoreboard(view);
  renderSeats(view);
  const center = $("center");
  center.innerHTML = "";
  const hand = $("hand");
  hand.innerHTML = "";
  RENDER[view.game](view, moves, center, hand);
  const said = el("div", "said table-said");
  said.id = "table-said";
  center.appendChild(said);
  $("prompt").innerHTML = Cards.inline(view.over ? view.result : (view.your_turn ? (view.prompt || "Your move") : view.status),
                                       view.game === "ish");
  $("prompt").classList.toggle("your-turn", !!(view.your_turn && interactive));
  renderButtons(view, moves);
  const rec = $("record");
  rec.hidden = !view.over;
  rec.href = `/api/tables/${view.table}/record`;
}

function renderScoreboard(view) {
  const box = $("scoreboard");
  box.innerHTML = "";
  const head = el("div", "score-head");
  head.innerHTML = `<b>${view.title}</b> · ${view.deal_word || "deal"} ${view.deal}` +
                   `<div class="goal">${view.goal}</div>`;
  box.appendChild(head);
  const t = el("table", "scores");
  t.id = "scores";
  if (view.partnerships) {
    const sides = [...new Set(view.sides)];
    for (const side of sides) {
      const seats = view.sides.map((s, p) => s === side ? p : -1).filter(p => p >= 0);
      const tr = el("tr");
      tr.dataset.side = side;
      tr.appendChild(el("td", null, seats.map(p => view.names[p]).join(" & ")));
      const td = el("td", "num", view.scores[seats[0]]);
      tr.appendChild(td);
      t.appendChild(tr);
    }
  } else {
    for (let p = 0; p < view.players; p++) {
      const tr = el("tr", p === view.seat ? "me" : "");
      tr.dataset.seat = p;
      tr.appendChild(el("td", null, view.names[p] + (p === view.dealer ? " (dealer)" : "")));
      const val = view.game === "ish" ? view.seat_info[p].bankroll : view.scores[p];
      tr.appendChild(el("td", "num", val));
      t.appendChild(tr);
    }
  }
  box.appendChild(t);
  const unit = view.game === "ish" ? "chips" : view.points_are_penalties ? "penalty points (lowest wins)" : "points";
  box.appendChild(el("div", "unit", unit));
}

function fan(cards, opts = {}) {
  const f = el("div", "fan" + (opts.cls ? " " + opts.cls : ""));
  for (const c of cards) f.appendChild(Cards.face(c, {sun: sun(), small: opts.small}));
  return f;
}

function backs(count, max = 8, small = true) {
  const f = el("div", "fan backs");
  for (let i = 0; i < Math.min(count, max); i++) f.appendChild(Cards.back({small, sun: sun()}));
  if (count > max) f.appendChild(el("span", "more", `+${count - max}`));
  return f;
}

function stockEl(count, label = "stock", move = null) {
  const z = el("div", "stock");
  if (count > 0) {
    const pile = el("div", "stack");
    for (let i = 0; i < Math.min(3, Math.ceil(count / 10)); i++) pile.appendChild(Cards.back({sun: sun()}));
    z.appendChild(pile);
  } else {
    z.appendChild(Cards.place("empty"));
  }
  const cap = el("div", "caption");
  cap.innerHTML = `${label} <b class="count" data-count="${count}">${count}</b>`;
  z.appendChild(cap);
  if (move) makeMove(z.querySelector(".stack") || z, move);
  return z;
}

function seatLine(view, p) {
  const i = view.seat_info[p];
  switch (view.game) {
    case "pishti": return `captured ${i.captured} · piştis ${i.pistis}` + (i.pisti_points ? ` (${i.pisti_points})` : "");
    case "pasur": return `captured ${i.captured} · clubs ${i.clubs} · surs ${i.surs} · ${i.round_points} pt${i.round_points === 1 ? "" : "s"} this round` +
                         (i.sur_capped ? " · sur capped" : "");
    case "pis_yedili": return `${i.hand} card${i.hand === 1 ? "" : "s"} · penalty ${view.scores[p]}`;
    case "pishe_pasha": return "";
    case "ish": return i.out && !i.in_round ? "out" : `bankroll ${i.bankroll}` + (i.stake !== null ? ` · stake ${i.stake}` : "");
  }
  return "";
}

function renderSeats(view) {
  const opp = $("opponents");
  opp.innerHTML = "";
  const n = view.players;
  for (let k = 1; k < n; k++) {
    const p = (view.seat + k) % n;
    opp.appendChild(seatBox(view, p));
  }
  const you = $("you-seat");
  you.innerHTML = "";
  you.appendChild(seatBox(view, view.seat));
}

function seatBox(view, p) {
  const box = el("div", "seat-box" + (p === view.seat ? " mine" : ""));
  box.dataset.seat = p;
  box.id = "seat-" + p;
  if (view.to_move === p && !view.over) box.classList.add("to-move");
  if (view.partnerships && view.sides[p] === view.sides[view.seat] && p !== view.seat) box.classList.add("partner");
  const name = el("div", "name", view.names[p]);
  if (p === view.dealer) name.appendChild(el("span", "dealer-chip", "D"));
  box.appendChild(name);
  const body = el("div", "seat-body");
  if (p !== view.seat) SEAT_CARDS[view.game](view, p, body);
  else if (view.game === "ish") SEAT_CARDS.ish(view, p, body);
  box.appendChild(body);
  box.appendChild(el("div", "info", seatLine(view, p)));
  const said = el("div", "said");
  if (S.said[p]) said.innerHTML = Cards.inline(S.said[p], view.game === "ish");
  box.appendChild(said);
  return box;
}

const SEAT_CARDS = {
  pishti: (v, p, body) => body.appendChild(backs(v.seat_info[p].hand)),
  pasur: (v, p, body) => body.appendChild(backs(v.seat_info[p].hand)),
  pis_yedili: (v, p, body) => body.appendChild(backs(v.seat_info[p].hand, 12)),
  pishe_pasha: (v, p, body) => {
    const row = el("div", "pp-row");
    row.appendChild(stockEl(v.stocks[p].count, v.stocks[p].known ? "stock (turned over)" : "stock")).id = "stock-" + p;
    row.appendChild(discardEl(v, p, null));
    body.appendChild(row);
  },
  ish: (v, p, body) => {
    const i = v.seat_info[p];
    if (i.out && !i.in_round) { body.appendChild(el("div", "out", "out of the match")); return; }
    const row = el("div", "ish-cards");
    if (i.cards) row.appendChild(fan(i.cards, {small: p !== v.seat}));
    else row.appendChild(backs(i.picks, 2, p !== v.seat));
    body.appendChild(row);
    const tags = el("div", "ish-tags");
    if (i.result !== null && i.result !== undefined) tags.appendChild(el("span", "badge result", `result ${i.result === "CR" ? "Crown" : i.result}`));
    if (i.eligible) tags.appendChild(el("span", "badge eligible", "best"));
    if (i.call) tags.appendChild(el("span", "badge call", i.call));
    if (i.stake !== null) tags.appendChild(el("span", "chip", i.stake));
    body.appendChild(tags);
  },
};

function discardEl(view, p, giveMove) {
  const pile = view.discards[p];
  const z = el("div", "discard");
  z.dataset.owner = p;
  if (pile.length) {
    const shown = pile.slice(-8);
    const f = fan(shown, {cls: "overlap"});
    if (pile.length > 8) f.insertBefore(el("span", "more", `${pile.length - 8} more`), f.firstChild);
    z.appendChild(f);
    if (giveMove) makeMove(f.lastElementChild, giveMove);
  } else {
    z.appendChild(Cards.place("discard"));
  }
  const cap = el("div", "caption");
  cap.innerHTML = `discard <b class="count">${pile.length}</b>`;
  z.appendChild(cap);
  return z;
}

function makeMove(node, move) {
  node.classList.add("move");
  node.dataset.move = move.id;
  node.dataset.kind = move.kind;
  node.title = move.text;
  node.tabIndex = 0;
  node.setAttribute("role", "button");
  node.addEventListener("click", ev => { ev.stopPropagation(); sendMove(move); });
  node.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); node.click(); } });
}

/* what a card in hand would do, written under it (fishing games): "takes 8♥", "trails", "takes: you choose";
   the terminal lists the same moves ("3D takes 8H"), and a touch screen has no hover to show a title */
function captionFor(m) {
  const t = m.text;
  if (/^play /.test(t)) return "takes: you choose";
  if (t === m.card) return "stays on the pile";
  return t.startsWith(m.card + " ") ? t.slice(m.card.length + 1) : t;
}

function handCards(view, moves, hand, opts = {}) {
  const byCard = {};
  for (const m of moves) if (m.kind === "card" || m.kind === "jack") (byCard[m.card] = byCard[m.card] || []).push(m);
  const captions = view.game === "pasur" || view.game === "pishti";
  for (const c of view.hand) {
    let card = Cards.face(c, {sun: sun()});
    const ms = byCard[c];
    if (ms && ms.length === 1 && ms[0].kind === "card") {
      makeMove(card, ms[0]);
      if (captions) {
        const slot = el("div", "hand-slot");
        const cap = el("div", "caption move-caption");
        cap.innerHTML = Cards.inline(captionFor(ms[0]));
        cap.addEventListener("click", () => card.click());
        slot.append(card, cap);
        hand.appendChild(slot);
        continue;
      }
    } else if (ms && ms.length) {                       // a jack at Pis Yedili: name a suit
      card.classList.add("move", "group");
      card.dataset.move = "jack";
      card.dataset.kind = "jack";
      card.title = "play and name a suit";
      card.tabIndex = 0;
      card.setAttribute("role", "button");
      card.addEventListener("click", ev => { ev.stopPropagation(); openPicker(card, ms); });
      card.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); card.click(); } });
    } else if (moves.length && view.your_turn) {
      card.classList.add("dim");
    }
    hand.appendChild(card);
  }
  if (!view.hand.length && !opts.quiet) hand.appendChild(el("div", "empty-hand", "no cards in hand"));
}

function openPicker(anchor, moves) {
  closePicker();
  const p = el("div", "picker");
  p.id = "suit-picker";
  p.appendChild(el("div", "picker-title", `${Cards.label(moves[0].card)}: name a suit`));
  for (const m of moves) {
    const b = el("button", "move suit-" + m.suit + (m.suit === "D" || m.suit === "H" ? " red" : " black"));
    b.type = "button";
    b.dataset.move = m.id;
    b.dataset.kind = "suit";
    b.dataset.suit = m.suit;
    b.innerHTML = `${Cards.SUIT[m.suit]} <small>${Cards.SUIT_NAME[m.suit]}</small>`;
    b.title = m.text;
    b.addEventListener("click", ev => { ev.stopPropagation(); sendMove(m); });
    p.appendChild(b);
  }
  anchor.appendChild(p);
  S.picker = p;
}
function closePicker() { if (S.picker) { S.picker.remove(); S.picker = null; } }

function renderButtons(view, moves) {
  const bar = $("moves");
  bar.innerHTML = "";
  for (const m of moves) {
    if (m.kind === "card" || m.kind === "jack" || m.kind === "slot") continue;   // clicked on the cards
    const b = el("button", "move kind-" + m.kind);
    b.type = "button";
    b.dataset.move = m.id;
    b.dataset.kind = m.kind;
    b.title = m.text;
    if (m.kind === "capture") {
      b.innerHTML = Cards.inline(m.text);
      for (const [on, off] of [["mouseenter", "mouseleave"], ["focus", "blur"]]) {
        b.addEventListener(on, () => highlight(m.cards, true));
        b.addEventListener(off, () => highlight(m.cards, false));
      }
    } else {
      b.innerHTML = Cards.inline(m.label || m.text, sun());
    }
    b.addEventListener("click", () => sendMove(m));
    bar.appendChild(b);
  }
}

function highlight(cards, on) {
  for (const c of cards) {
    for (const e of document.querySelectorAll(`#center .card[data-card="${c}"]`)) e.classList.toggle("hl", on);
  }
}

function zone(title, cls) {
  const z = el("div", "zone " + (cls || ""));
  if (title) z.appendChild(el("div", "zone-title", title));
  return z;
}

const RENDER = {
  pishti(view, moves, center, hand) {
    const p = view.pile;
    const z = zone(`pile · ${p.count} card${p.count === 1 ? "" : "s"}` + (p.face_down ? ` (${p.face_down} face down)` : ""), "pile-zone");
    z.id = "pile";
    const row = el("div", "pile");
    if (p.face_down) row.appendChild(backs(p.face_down, 3, false));
    if (p.face_up.length) {
      const shown = p.face_up.slice(-10);
      const f = fan(shown, {cls: "overlap"});
      f.lastElementChild.classList.add("top");
      row.appendChild(f);
    }
    if (!p.count) row.appendChild(Cards.place("empty pile"));
    z.appendChild(row);
    center.appendChild(z);
    const info = zone(null, "side-zone");
    info.appendChild(stockEl(view.stock)).id = "stock";
    info.appendChild(el("div", "meta", `hand ${view.hand_number} of ${view.hands_per_deal}`));
    center.appendChild(info);
    handCards(view, moves, hand);
  },
  pasur(view, moves, center, hand) {
    const z = zone(`pool · ${view.pool.length} card${view.pool.length === 1 ? "" : "s"}`, "pool-zone");
    z.id = "pool";
    const row = el("div", "pool");
    for (const c of view.pool) row.appendChild(Cards.face(c));
    if (!view.pool.length) row.appendChild(Cards.place("empty pool"));
    z.appendChild(row);
    center.appendChild(z);
    const info = zone(null, "side-zone");
    if (view.selecting) {
      const s = el("div", "playing");
      s.id = "playing";
      s.appendChild(el("div", "zone-title", "being played"));
      s.appendChild(Cards.face(view.selecting.card));
      info.appendChild(s);
    }
    info.appendChild(stockEl(view.stock)).id = "stock";
    info.appendChild(el("div", "meta", `hand ${view.hand_number} of ${view.hands_per_deal}`));
    center.appendChild(info);
    handCards(view, moves, hand);
  },
  pis_yedili(view, moves, center, hand) {
    const d = view.discard;
    const z = zone(`discard · ${d.count}`, "discard-zone");
    z.id = "discard";
    const row = el("div", "pile");
    if (d.recent.length) {
      const f = fan(d.recent, {cls: "overlap"});
      f.lastElementChild.classList.add("top");
      row.appendChild(f);
    } else {
      row.appendChild(Cards.place("empty"));
    }
    z.appendChild(row);
    const badges = el("div", "badges");
    if (view.named_suit) {
      const s = {clubs: "C", diamonds: "D", hearts: "H", spades: "S"}[view.named_suit];
      const b = el("span", "badge named " + (s === "D" || s === "H" ? "red" : "black"));
      b.id = "named-suit";
      b.innerHTML = `suit named: <b>${Cards.SUIT[s]}</b> ${view.named_suit}`;
      badges.appendChild(b);
    }
    if (view.pending) {
      const b = el("span", "badge pending", `+${view.pending} to draw`);
      b.id = "pending";
      badges.appendChild(b);
    }
    badges.appendChild(el("span", "badge dir", view.direction > 0 ? "↻ clockwise" : "↺ counter-clockwise"));
    z.appendChild(badges);
    center.appendChild(z);
    const info = zone(null, "side-zone");
    const draw = moves.find(m => m.actions[0] === 68);
    info.appendChild(stockEl(view.stock, "stock", draw || null)).id = "stock";
    center.appendChild(info);
    handCards(view, moves, hand);
  },
  pishe_pasha(view, moves, center, hand) {
    const z = zone("suit piles", "suits-zone");
    z.id = "suit-piles";
    const row = el("div", "suit-piles");
    for (const sp of view.suit_piles) {
      const slot = el("div", "suit-pile");
      slot.dataset.suit = sp.suit;
      slot.appendChild(sp.top ? Cards.face(sp.top) : Cards.place(Cards.SUIT[sp.suit],
                       sp.suit === "D" || sp.suit === "H" ? "red" : "black"));
      slot.appendChild(el("div", "caption", `${sp.count}/13`));
      row.appendChild(slot);
    }
    z.appendChild(row);
    center.appendChild(z);
    if (view.pending) {
      const pz = zone("turned card", "pending-zone");
      pz.id = "pending-card";
      pz.appendChild(Cards.face(view.pending));
      pz.appendChild(el("div", "caption", "fits only the opponent's pile"));
      center.appendChild(pz);
    }
    const me = view.you;
    const turn = moves.find(m => m.kind === "turn");
    const give = moves.find(m => m.kind === "give");
    const row2 = el("div", "pp-row mine");
    row2.appendChild(stockEl(view.stocks[me].count, view.stocks[me].known ? "your stock (turned over)" : "your stock",
                             turn || null)).id = "stock-" + me;
    row2.appendChild(discardEl(view, me, give || null));
    hand.appendChild(row2);
  },
  ish(view, moves, center, hand) {
    const pot = view.seat_info.reduce((a, i) => a + (i.stake || 0), 0);
    const z = zone(`round ${view.round} · ${view.phase.toLowerCase()}`, "ish-zone");
    z.id = "ish-center";
    const potEl = el("div", "pot");
    potEl.innerHTML = `pot <b>${pot}</b>`;
    z.appendChild(potEl);
    if (view.slots_taken) {
      if (moves.some(m => m.kind === "slot")) {    // said here too: the grid can push the action bar down
        z.appendChild(el("div", "slots-prompt", "Your turn: take a face-down card (click one)"));
      }
      const grid = el("div", "slots");
      grid.id = "slots";
      const bySlot = {};
      for (const m of moves) if (m.kind === "slot") bySlot[m.slot] = m;
      view.slots_taken.forEach((taken, k) => {
        const c = taken ? Cards.place("") : Cards.back({small: true, sun: true});
        c.classList.add("slot");
        c.dataset.slot = k;
        if (!taken && bySlot[k]) makeMove(c, bySlot[k]);
        grid.appendChild(c);
      });
      z.appendChild(grid);
    }
    if (view.last_round_cards && view.phase === "BET") {
      const last = el("div", "last-round");
      last.appendChild(el("div", "zone-title", "last round"));
      view.last_round_cards.forEach((cards, p) => {
        if (!cards) return;
        const r = el("div", "last-seat");
        r.appendChild(el("span", null, view.names[p]));
        r.appendChild(fan(cards, {small: true}));
        last.appendChild(r);
      });
      z.appendChild(last);
    }
    center.appendChild(z);
  },
};

/* ------------------------------------------------------------------ deal and match end --------------------- */
function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (v === true) return "yes";
  if (v === false) return "no";
  if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(3);
  if (Array.isArray(v)) return v.length ? v.join(" ") : "–";
  return String(v);
}

function showDealEnd(de) {
  const word = de.deal_word || "deal";
  $("deal-end-title").textContent = `${word[0].toUpperCase() + word.slice(1)} ${de.deal} is over`;
  const t = $("breakdown");
  t.innerHTML = "";
  const head = el("tr");
  head.appendChild(el("th"));
  de.names.forEach((n, p) => { const th = el("th", null, n); th.dataset.seat = p; head.appendChild(th); });
  t.appendChild(head);
  for (const row of de.rows) {
    const tr = el("tr");
    tr.dataset.key = row.key;
    tr.appendChild(el("th", "label", row.label));
    row.values.forEach((v, p) => {
      const td = el("td", "num");
      td.dataset.key = row.key;
      td.dataset.seat = p;
      td.dataset.value = JSON.stringify(v);
      if (Array.isArray(v) && v.length && typeof v[0] === "string") {
        td.classList.add("cards");
        td.innerHTML = v.map(c => Cards.inline(c, sun())).join(" ");
      } else td.textContent = fmt(v);
      tr.appendChild(td);
    });
    t.appendChild(tr);
  }
  const dw = de.deal_word || "deal";
  const what = S.view && S.view.game === "ish" ? "chips" : de.points_are_penalties ? "penalty" : "points";
  for (const [key, label, values] of [["deal_points", `${what} this ${dw}`, de.deal_points],
                                      ["scores", "match total", de.scores]]) {
    if (!values) continue;
    const tr = el("tr", "total " + key);
    tr.id = key === "deal_points" ? "deal-points" : "deal-scores";
    tr.appendChild(el("th", "label", label));
    values.forEach((v, p) => {
      const td = el("td", "num", fmt(v));
      td.dataset.seat = p;
      td.dataset.value = JSON.stringify(v);
      tr.appendChild(td);
    });
    t.appendChild(tr);
  }
  const facts = $("deal-facts");
  facts.innerHTML = "";
  for (const f of de.facts) {
    const d = el("div", "fact");
    d.dataset.key = f.key;
    d.dataset.value = JSON.stringify(f.value);
    d.innerHTML = `${f.label}: <b>${Cards.inline(f.text, sun())}</b>`;
    facts.appendChild(d);
  }
  const cards = $("deal-end-cards");
  cards.innerHTML = "";
  if (de.cards) {
    de.cards.forEach((cs, p) => {
      if (!cs) return;
      const r = el("div", "last-seat");
      r.appendChild(el("span", null, de.names[p]));
      r.appendChild(fan(cs, {small: true}));
      cards.appendChild(r);
    });
  }
  $("deal-end").hidden = false;
  setState("deal-end");
  return new Promise(resolve => {
    const btn = $("deal-continue");
    const done = () => { btn.removeEventListener("click", done); $("deal-end").hidden = true; setState("busy"); resolve(); };
    btn.addEventListener("click", done);
    btn.focus();
  });
}

function showMatchEnd(view) {
  $("match-result").textContent = view.result;
  $("match-detail").innerHTML = view.result_detail ? Cards.inline(view.result_detail, view.game === "ish") : "";
  const t = $("final-scores");
  t.innerHTML = "";
  for (let p = 0; p < view.players; p++) {
    const tr = el("tr", view.winners && view.winners.includes(p) ? "winner" : "");
    tr.dataset.seat = p;
    tr.appendChild(el("td", null, view.names[p]));
    tr.appendChild(el("td", "num", view.game === "ish" ? view.seat_info[p].bankroll : view.scores[p]));
    t.appendChild(tr);
  }
  $("match-record").href = `/api/tables/${view.table}/record`;
  $("match-end").hidden = false;
}

/* ------------------------------------------------------------------ start ---------------------------------- */
async function boot() {
  $("start").addEventListener("click", start);
  $("setup-form").addEventListener("submit", ev => { ev.preventDefault(); start(); });
  $("to-setup").addEventListener("click", showSetup);
  $("rules-btn").addEventListener("click", () => toggleRules());
  $("rules-close").addEventListener("click", () => toggleRules(false));
  document.addEventListener("keydown", ev => { if (ev.key === "Escape" && !$("rules").hidden) toggleRules(false); });
  $("new-match").addEventListener("click", newMatch);
  $("match-new").addEventListener("click", newMatch);
  $("match-look").addEventListener("click", () => { $("match-end").hidden = true; });
  $("match-setup").addEventListener("click", showSetup);
  document.addEventListener("click", closePicker);
  const speed = localStorage.getItem("kahve.speed");
  if (speed && PACE[speed]) $("speed").value = speed;
  $("speed").addEventListener("change", () => localStorage.setItem("kahve.speed", $("speed").value));
  try { await loadGames(); }
  catch (e) { document.body.textContent = "The kahve server cannot be reached: " + e.message; return; }
  const want = QUERY.get("game");
  selectGame(S.games[want] ? want : S.games[localStorage.getItem("kahve.game")] ? localStorage.getItem("kahve.game") : S.order[0]);
  // the table in the address (a reload, a bookmark), else the one this tab had open
  const saved = QUERY.get("table") || sessionStorage.getItem("kahve.table");
  if (saved) {
    try {
      const a = await api("GET", `/api/tables/${saved}`);
      openTable(a, a.log);
      return;
    } catch (e) {
      sessionStorage.removeItem("kahve.table");
      showSetup();
      $("setup-error").textContent = e.message;
      return;
    }
  }
  showSetup();
}

boot();
