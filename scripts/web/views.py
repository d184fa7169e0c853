"""What one seat sees of a table: plain JSON data for the web page, built from the engine state.

:func:`seat_view` is the only door from an engine state to the page. It starts from the state's documented
``to_dict()`` (every game's module docstring lists its keys), which holds everything, hidden parts included,
and copies out only what the seat may see: its own hand, the face-up piles, counts of everyone else's cards
and of the stock, scores, its legal moves with their engine texts. Other hands, the stock order, face-down
cards and other seats' secret decisions never enter the result (tests/web/test_hidden.py checks every JSON
answer of played deals against the engine state).

:func:`log_entries` turns the engine's move log (``state.move_log``, ``state.move_texts(seat)``) into the
lines the page shows, as this seat saw them; :func:`deal_end` turns a deal report into the scoring table.
Action ids are sent only for the seat's own legal moves, never for logged moves (an Ish call's id would tell
what the text hides).
"""

from __future__ import annotations

from typing import Any, Callable

from kahve import envs

#: per game: the deal-report breakdown keys whose value is a list of seats (not one value per seat)
SEAT_SETS = {"ish": ("eligible", "out", "eliminated")}

#: per game: labels of the deal-report breakdown keys, in display order (unknown keys follow, as named)
BREAKDOWN_LABELS = {
    "pishti": {"cards": "cards taken", "jacks": "jacks", "aces": "aces", "two_clubs": "2♣", "ten_diamonds": "10♦",
               "card_points": "card points", "majority": "majority bonus", "pistis": "piştis",
               "pisti_points": "pişti points"},
    "pasur": {"cards": "cards taken", "clubs": "clubs", "seven_clubs": "7+ clubs (haft khâj)",
              "ten_diamonds": "10♦", "two_clubs": "2♣", "aces": "aces", "jacks": "jacks",
              "card_points": "card points", "surs": "net surs", "sur_points": "sur points"},
    "pis_yedili": {"hand_value": "cards left in hand", "multiplier": "multiplier", "muamele_cards": "Muamele draws",
                   "muamele_points": "Muamele points", "total": "penalty", "went_out": "went out",
                   "end": "deal ended", "last_card": "last card"},
    "pishe_pasha": {"winner": "winner", "stock": "cards left in stock", "discard": "cards left in discard",
                    "turns": "turns", "truncated": "drawn (turn limit reached)"},
    "ish": {"stakes": "stake", "results": "result", "calls": "called", "reaction_times": "reaction time",
            "fines": "fine", "bankrolls": "bankroll", "eligible": "eligible", "winner": "winner",
            "void": "void round", "out": "out of the match", "eliminated": "went broke this round"},
}

#: settings a person does not choose at the web table (fixed to these values)
FIXED_SETTINGS = {"episode": "match", "skip_single_choice": True}
HIDDEN_SETTINGS = ("episode", "reward", "skip_single_choice")


def _strs(cards) -> list[str]:
    return [str(c) for c in cards]


# ----- the table around one seat --------------------------------------------------------------------------------
def seat_names(n: int, seat: int, sides=None) -> list[str]:
    names = []
    for p in range(n):
        if p == seat:
            names.append("You")
        elif sides is not None and len(set(sides)) < n and sides[p] == sides[seat]:
            names.append(f"Partner (player {p})")
        else:
            names.append(f"Player {p}")
    return names


def seat_view(state, seat: int, extra: dict | None = None) -> dict:
    """Everything ``seat`` may see of ``state`` as JSON data (see the module docstring).

    ``extra`` carries what the table remembers that the seat saw earlier (the Ish cards of the last round,
    turned up for everyone before the round was resolved)."""
    g = state.game
    d = state.to_dict()
    n = state.num_players
    sides = list(g.sides)
    names = seat_names(n, seat, sides)
    over = state.current_player is None
    view = {
        "game": g.name,
        "title": g.title,
        "seat": seat,
        "players": n,
        "names": names,
        "sides": sides,
        "partnerships": len(set(sides)) < n,
        "dealer": d["dealer"],
        "to_move": state.current_player,
        "your_turn": state.current_player == seat,
        "deal": state.deals_completed + (0 if over else 1),
        "deal_word": getattr(state, "deal_word", "deal"),     # "round" in Pâsur and Ish
        "deals_completed": state.deals_completed,
        "scores": [state.scores[sides[p]] for p in range(n)],
        "points_are_penalties": g.points_sign < 0,
        "goal": _goal_text(g),
        "over": over,
        "truncated": bool(state.truncated),
        "winners": None if state.winners is None else list(state.winners),
        "result": _result_text(state, seat, names) if over else None,
        "result_detail": _match_detail(state, seat) if over else None,
    }
    view.update(_GAME_VIEWS[g.name](state, d, seat, extra or {}))
    view["moves"] = legal_moves(state, seat) if state.current_player == seat else []
    view["status"] = _status(state, view, names)
    return view


def _goal_text(g) -> str:
    s = g.settings
    if g.name == "pishti":
        return f"first side to {s.target_score} points"
    if g.name == "pasur":
        return f"first to {s.target_score} points"
    if g.name == "pis_yedili":
        return f"the match ends when someone reaches {s.game_end_penalty} penalty points; lowest total wins"
    if g.name == "pishe_pasha":
        return "one deal" if s.match_target == "one_deal" else f"first to {s.match_target} points"
    if g.name == "ish":
        return f"last player with chips wins (or the richest after {s.max_rounds} rounds)"
    return ""


def _result_text(state, seat: int, names: list[str]) -> str:
    winners = list(state.winners or [])
    if not winners or len(winners) == state.num_players:
        text = "The match is a draw." if state.num_players == 2 else "Everyone shares the win."
    elif seat in winners:
        text = "You won the match!" if len(winners) == 1 or _same_side(state, winners) else "You share the win."
    else:
        text = "Winner: " + ", ".join(names[w] for w in winners) + "."
    if state.truncated and getattr(state, "describe_match", None) is None:
        text += " (The match was stopped at its limit.)"
    return text


def _match_detail(state, seat: int) -> str | None:
    """The engine's own line on the match result, as this seat reads it, when the engine has one."""
    describe = getattr(state, "describe_match", None)
    if describe is None:
        return None
    text = describe(seat)
    return text[:1].upper() + text[1:] if text else None


def _same_side(state, seats) -> bool:
    sides = state.game.sides
    return len({sides[p] for p in seats}) == 1


def _status(state, view: dict, names: list[str]) -> str:
    if view["over"]:
        return view["result"]
    p = state.current_player
    if p != view["seat"]:
        return f"{names[p]} to move"
    return view.get("prompt") or "Your move"


# ----- per game ---------------------------------------------------------------------------------------------
def _pishti(state, d, seat, extra) -> dict:
    g = state.game
    n = state.num_players
    pile = d["pile"]
    down = d["pile_face_down"]
    sides = list(g.sides)
    return {
        "hand": _strs(d["hands"][seat]),
        "pile": {"count": len(pile), "face_down": down, "face_up": _strs(pile[down:])},
        "stock": len(d["stock"]),
        "seat_info": [{"hand": len(d["hands"][p]), "captured": len(d["captured"][sides[p]]),
                       "pistis": d["pistis"][sides[p]], "pisti_points": d["pisti_points"][sides[p]]}
                      for p in range(n)],
        "last_capturer": d["last_capturer"],
        "hand_number": d["hand_number"], "hands_per_deal": g.hands_per_deal, "play_number": d["play_number"],
        "prompt": "Your turn: play a card",
    }


def _pasur(state, d, seat, extra) -> dict:
    n = state.num_players
    sel = d["selecting"]
    # a card being played with a choice of captures lies face up on the table, whoever plays it
    selecting = None if sel is None else {"card": sel["card"], "picked": _strs(sel["picked"])}
    clubs = [sum(1 for c in cap if c.endswith("C")) for cap in d["captured"]]
    return {
        "hand": _strs(d["hands"][seat]),
        "pool": _strs(d["pool"]),
        "stock": len(d["stock"]),
        "selecting": selecting,
        "seat_info": [{"hand": len(d["hands"][p]), "captured": len(d["captured"][p]), "clubs": clubs[p],
                       "surs": d["surs"][p], "sur_capped": bool(d["sur_capped"][p]),
                       "round_points": state.round_points(p)}
                      for p in range(n)],
        "last_capturer": d["last_capturer"],
        "hand_number": d["hand_number"], "hands_per_deal": 6,
        "prompt": ("Choose what your " + sel["card"] + " takes") if sel is not None else "Your turn: play a card",
    }


_PY_PROMPTS = {
    "FIRST_ROUND": "First round: play a club (2-6, 8, 9, Q or K)",
    "NORMAL": "Your turn: play a card or draw",
    "FACING_SEVEN": "A seven! Answer with a 7 or take the penalty",
    "POST_DRAW": "You drew: play a card or pass",
    "FOLLOW_UP": "Play again (follow up)",
}


def _pis_yedili(state, d, seat, extra) -> dict:
    n = state.num_players
    discard = d["discard"]
    phase = d["phase"]
    prompt = _PY_PROMPTS.get(phase, "Your move")
    if phase == "FACING_SEVEN":
        prompt = f"A seven! Answer with a 7 or take {d['pending']}"
    return {
        "hand": _strs(d["hands"][seat]),
        "discard": {"count": len(discard), "top": d["top"], "recent": _strs(discard[-6:])},
        "named_suit": d["named_suit"],
        "pending": d["pending"],
        "direction": d["direction"],
        "phase": phase,
        "follow_up": d["follow_up"],
        "stock": len(d["stock"]),
        "seat_info": [{"hand": len(d["hands"][p])} for p in range(n)],
        "prompt": prompt,
    }


def _pishe_pasha(state, d, seat, extra) -> dict:
    other = 1 - seat
    pending = d["pending"]
    prompt = "Your turn: turn a card from your stock, or give"
    if pending is not None and state.current_player == seat:
        prompt = f"{pending} fits only the opponent's pile: place it there, or keep it"
    return {
        "suit_piles": [{"suit": "CDHS"[k], "count": len(p), "top": p[-1] if p else None}
                       for k, p in enumerate(d["suit_piles"])],
        # a stock is face down: only its size (a turned-over discard pile's order is public, PP-5, but it is
        # not sent: the page shows no stock order)
        "stocks": [{"count": len(d["stocks"][p]), "known": bool(d["stock_known"][p])} for p in (0, 1)],
        "discards": [_strs(d["discards"][p]) for p in (0, 1)],
        "pending": pending,
        "phase": d["phase"],
        "turn_number": d["turn_number"],
        "you": seat, "opponent": other,
        "seat_info": [{"stock": len(d["stocks"][p]), "discard": len(d["discards"][p])} for p in (0, 1)],
        "prompt": prompt,
    }


def _ish(state, d, seat, extra) -> dict:
    n = state.num_players
    phase = d["phase"]
    revealed = phase in ("CALL",)           # REVEAL turned every drawn card up (IS-5)
    order = list(d["order"])
    seats = []
    for p in range(n):
        info = {"bankroll": d["bankrolls"][p], "out": bool(d["out"][p]), "in_round": p in order,
                "has_bet": bool(d["has_bet"][p]), "stake": d["stakes"][p] if d["has_bet"][p] else None,
                "picks": len(d["picks"][p]),
                "cards": _strs(d["hands"][p]) if revealed and p in order else None,
                "result": d["results"][p] if revealed else None,
                "eligible": (p in d["eligible"]) if revealed else None}
        call = d["calls"][p]
        if call is None:
            info["call"] = None
        elif p == seat:
            info["call"] = "called" if call else "silent"
        else:
            info["call"] = "decided"       # the others' calls stay hidden until the round is resolved (IS-1)
        seats.append(info)
    taken = [False] * 40
    for p in range(n):
        for k in d["picks"][p]:
            taken[k] = True
    prompt = {"BET": "Place your stake", "SELECT": "Take a face-down card",
              "CALL": "Call, or stay silent?"}.get(phase, "")
    if phase == "CALL" and state.current_player == seat:
        me = seats[seat]
        prompt = ("You hold the Crown: call Kath!" if me["result"] == "CR" else
                  "You hold the best result: call Paoy!" if me["eligible"] else
                  "Someone else holds the best result: stay silent?")
    return {
        "phase": phase,
        "round": d["round"],
        "order": order,
        "seat_info": seats,
        "slots_taken": taken if phase == "SELECT" else None,
        "card_selection": state.settings.card_selection,
        "last_round_cards": extra.get("ish_last_cards"),
        "prompt": prompt,
    }


_GAME_VIEWS: dict[str, Callable] = {"pishti": _pishti, "pasur": _pasur, "pis_yedili": _pis_yedili,
                                    "pishe_pasha": _pishe_pasha, "ish": _ish}


# ----- legal moves -------------------------------------------------------------------------------------------
def legal_moves(state, seat: int) -> list[dict]:
    """The seat's legal moves, each ``{"id", "actions", "text", "kind", ...}``: ``actions`` is what the page
    sends back (one action id, or several for a Pâsur capture chosen as a whole)."""
    if state.current_player != seat:
        return []
    name = state.game.name
    moves = _MOVES[name](state)
    for i, m in enumerate(moves):
        m["id"] = i
    return moves


def _card_moves(state, kind: str = "card") -> list[dict]:
    out = []
    for a in state.legal_actions():
        out.append({"actions": [a], "text": state.describe_action(a), "kind": kind, "card": state.card_str(a)})
    return out


def _pishti_moves(state):
    return _card_moves(state)


def _pasur_moves(state):
    legal = state.legal_actions()
    if not legal or legal[0] < 52:                 # PLAY: a card from hand
        return _card_moves(state)
    return pasur_captures(state)


def pasur_captures(state) -> list[dict]:
    """Pâsur SELECT as whole captures: for each capture the played card can still make, the TAKE picks that
    choose it (the engine applies the picks that have no alternative) and its text ("6D takes 2H 3C")."""
    d = state.to_dict()
    sel = d["selecting"]
    done = len(d["turns"])
    out = []
    for option in sel["options"]:
        probe = state.clone()
        probe.move_log = None                     # a trial run: nothing of it reaches the table's log
        actions = []
        while len(actions) <= len(option):
            ps = probe.to_dict()["selecting"]
            if ps is None or probe.current_player != state.current_player or ps["card"] != sel["card"]:
                break
            a = 52 + probe.parse_card(option[len(ps["picked"])])
            actions.append(a)
            probe.apply(a)
        # the capture's own entry: the engine may go on with forced moves of the others, never shown here
        turns = probe.to_dict()["turns"]
        turn = turns[done] if len(turns) > done and probe.deals_completed == state.deals_completed else None
        if turn is not None and (turn["player"] != state.current_player or turn["card"] != sel["card"]):
            turn = None
        text = turn["text"] if turn else f"{sel['card']} takes {' '.join(option)}"
        out.append({"actions": actions, "text": text, "kind": "capture", "card": sel["card"],
                    "cards": _strs(turn["took"] if turn else option)})
    return out


def _pis_yedili_moves(state):
    out = []
    for a in state.legal_actions():
        text = state.describe_action(a)
        if a < 52:
            out.append({"actions": [a], "text": text, "kind": "card", "card": state.card_str(a)})
        elif a < 68:
            k = a - 52
            out.append({"actions": [a], "text": text, "kind": "jack", "card": state.card_str(13 * (k >> 2) + 10),
                        "suit": "CDHS"[k & 3]})
        else:
            label = {68: "Draw a card", 69: "Pass"}.get(a, text[:1].upper() + text[1:])
            out.append({"actions": [a], "text": text, "kind": "button", "label": label})
    return out


def _pishe_pasha_moves(state):
    out = []
    for a in state.legal_actions():
        text = state.describe_action(a)
        kind = {0: "turn", 1: "give", 2: "place", 3: "keep"}[a]
        label = {0: "Turn a card", 1: "Give", 2: "Place", 3: "Keep"}[a]
        out.append({"actions": [a], "text": text, "kind": kind, "label": label + (text[len(kind):] if a else "")})
    return out


def _ish_moves(state):
    g = state.game
    out = []
    for a in state.legal_actions():
        text = state.describe_action(a)
        if a < g.select_base:
            out.append({"actions": [a], "text": text, "kind": "bet", "stake": g.stakes[a],
                        "label": text[:1].upper() + text[1:]})
        elif a < g.no_call:
            out.append({"actions": [a], "text": text, "kind": "slot", "slot": a - g.select_base})
        else:
            out.append({"actions": [a], "text": text, "kind": "call" if a == g.call else "silent",
                        "label": text[:1].upper() + text[1:] + ("!" if a == g.call else "")})
    return out


_MOVES = {"pishti": _pishti_moves, "pasur": _pasur_moves, "pis_yedili": _pis_yedili_moves,
          "pishe_pasha": _pishe_pasha_moves, "ish": _ish_moves}


# ----- the move log and deal ends ----------------------------------------------------------------------------
def log_entries(state, seat: int, start: int, names: list[str] | None = None) -> list[dict]:
    """The move-log entries from ``start`` on as ``seat`` saw them: who, the engine's text (its public wording,
    or this seat's private one), whether the engine made the move by itself, and the deal."""
    log = state.move_log
    if log is None or start >= len(log):
        return []
    texts = state.move_texts(seat, start)
    names = names or seat_names(state.num_players, seat, list(state.game.sides))
    out = []
    for k, (m, text) in enumerate(zip(log[start:], texts)):
        if m.seat is not None:
            prefix = f"player {m.seat}: "
            if text.startswith(prefix):
                text = text[len(prefix):]
        out.append({"i": start + k, "seat": m.seat, "who": None if m.seat is None else names[m.seat],
                    "text": text, "forced": bool(m.forced), "deal": m.deal + 1})
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    return v


def _fact_text(key: str, v, names: list[str]) -> str:
    if v is None:
        return "nobody" if key == "winner" else "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if key == "winner" and isinstance(v, int):
        return names[v]
    if isinstance(v, str):
        return v.replace("_", " ")
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def deal_end(state, seat: int, report: dict, deal_number: int, extra: dict | None = None) -> dict:
    """A finished deal's scoring for the page: one row per per-seat value of the breakdown, facts for the rest,
    the deal points and match totals, straight from the engine's deal report (public: every seat gets it)."""
    g = state.game
    n = state.num_players
    names = seat_names(n, seat, list(g.sides))
    breakdown = report.get("breakdown", {}) or {}
    labels = BREAKDOWN_LABELS.get(g.name, {})
    seat_sets = SEAT_SETS.get(g.name, ())
    keys = [k for k in labels if k in breakdown] + [k for k in breakdown if k not in labels]
    rows, facts = [], []
    for k in keys:
        v = _plain(breakdown[k])
        label = labels.get(k, k.replace("_", " "))
        if k in seat_sets:
            facts.append({"key": k, "label": label, "value": v,
                          "text": ", ".join(names[p] for p in v) if v else "nobody"})
        elif isinstance(v, list) and len(v) == n:
            rows.append({"key": k, "label": label, "values": v})
        else:
            facts.append({"key": k, "label": label, "value": v, "text": _fact_text(k, v, names)})
    out = {"deal": deal_number, "deal_word": getattr(state, "deal_word", "deal"), "names": names,
           "rows": rows, "facts": facts,
           "deal_points": _plain(report.get("deal_points")), "scores": _plain(report.get("scores")),
           "winners": _plain(report.get("winners")),
           "points_are_penalties": g.points_sign < 0}
    if extra and extra.get("ish_last_cards") is not None:
        out["cards"] = extra["ish_last_cards"]
    return out


# ----- settings for the setup form ------------------------------------------------------------------------------
def settings_form(game_name: str) -> list[dict]:
    """The game's settings as form fields (hidden ones left out): name, kind, default, allowed values."""
    from kahve.envs.core import settings as S
    spec = envs.game_class(game_name).settings_spec
    out = []
    for s in spec.settings:
        if s.name in HIDDEN_SETTINGS:
            continue
        f = {"name": s.name, "default": _plain(s.default), "doc": s.doc, "allowed": s.allowed()}
        if isinstance(s, S.Flag):
            f["kind"] = "flag"
        elif isinstance(s, S.Choice):
            f["kind"] = "choice"
            f["options"] = [_plain(o) for o in s.options]
        elif isinstance(s, S.Int):
            f.update(kind="int", min=s.lo, max=s.hi, step=s.step)
        elif isinstance(s, S.Float):
            f.update(kind="float", min=s.lo, max=s.hi)
        else:
            f["kind"] = "text"
        out.append(f)
    return out
