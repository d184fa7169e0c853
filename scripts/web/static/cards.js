/* Cards drawn with HTML and CSS: the standard pack ("7H", "TD", "QS") and Ish's sun deck ("12R", "0N", "CR").
   Nothing is fetched: the suit signs are text, the backs a CSS pattern. */
"use strict";

const Cards = (() => {
  const SUIT = {C: "♣", D: "♦", H: "♥", S: "♠"};
  const SUIT_NAME = {C: "clubs", D: "diamonds", H: "hearts", S: "spades"};
  const RANK = {T: "10"};
  const SUN = {R: {sign: "☀", name: "Rising", mark: "↑"}, N: {sign: "☀", name: "Risen", mark: "●"},
               S: {sign: "☀", name: "Setting", mark: "↓"}};

  function parse(code, sun) {
    if (sun) {
      if (code === "CR") return {sun: true, crown: true};
      const m = /^(1[0-2]|\d)([RNS])$/.exec(code);
      return m ? {sun: true, value: m[1], suit: m[2]} : null;
    }
    const m = /^(10|[A2-9TJQK])([CDHS])$/.exec(code);
    return m ? {rank: RANK[m[1]] || m[1], suit: m[2]} : null;
  }

  function label(code, sun) {
    const c = parse(code, sun);
    if (!c) return code;
    if (c.sun) return c.crown ? "the Crown" : `${c.value} ${SUN[c.suit].name}`;
    return c.rank + SUIT[c.suit];
  }

  /* a face-up card; opts: {sun: bool, small: bool} */
  function face(code, opts = {}) {
    const c = parse(code, opts.sun);
    const el = document.createElement("div");
    el.className = "card face" + (opts.small ? " small" : "");
    el.dataset.card = code;
    if (!c) { el.textContent = code; return el; }
    if (c.sun) {
      el.classList.add("sun");
      if (c.crown) {
        el.classList.add("crown");
        el.innerHTML = `<span class="corner tl">♛</span><span class="pip">♛</span><span class="sub">Crown</span>`;
      } else {
        const s = SUN[c.suit];
        el.classList.add("sun-" + c.suit);
        el.innerHTML = `<span class="corner tl">${c.value}<br>${s.mark}</span><span class="pip">${s.sign}</span>` +
          `<span class="value">${c.value}</span><span class="sub">${s.name}</span>` +
          `<span class="corner br">${c.value}<br>${s.mark}</span>`;
      }
      el.title = label(code, true);
      return el;
    }
    const red = c.suit === "D" || c.suit === "H";
    el.classList.add(red ? "red" : "black", "suit-" + c.suit);
    const pip = SUIT[c.suit];
    const centre = "JQK".includes(c.rank)
      ? `<span class="court">${c.rank}</span><span class="pip court-pip">${pip}</span>`
      : `<span class="pip">${pip}</span>`;
    el.innerHTML = `<span class="corner tl">${c.rank}<br>${pip}</span>${centre}` +
      `<span class="corner br">${c.rank}<br>${pip}</span>`;
    el.title = `${c.rank === "A" ? "ace" : c.rank} of ${SUIT_NAME[c.suit]}`;
    return el;
  }

  function back(opts = {}) {
    const el = document.createElement("div");
    el.className = "card back" + (opts.small ? " small" : "") + (opts.sun ? " sun-back" : "");
    return el;
  }

  /* an empty place on the table (a suit pile not yet started) */
  function place(text, cls = "") {
    const el = document.createElement("div");
    el.className = "card place " + cls;
    el.innerHTML = `<span>${text}</span>`;
    return el;
  }

  /* card codes inside a text as coloured inline signs: "7H takes 4C" -> 7♥ takes 4♣ */
  function inline(text, sun) {
    const esc = String(text).replace(/[&<>"]/g, ch => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[ch]));
    if (sun) {
      return esc.replace(/\b(CR|(1[0-2]|\d)([RNS]))\b/g, (all, code) =>
        `<span class="inline-card sun">${label(code, true)}</span>`);
    }
    return esc.replace(/\b(10|[A2-9TJQK])([CDHS])\b/g, (all, r, s) =>
      `<span class="inline-card ${s === "D" || s === "H" ? "red" : "black"}">${RANK[r] || r}${SUIT[s]}</span>`);
  }

  return {face, back, place, inline, label, SUIT, SUIT_NAME};
})();
