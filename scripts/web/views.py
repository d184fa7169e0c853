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
from kahve.agents.policies.bot import NOT_IMPOSED

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
    "pis_yedili": {"hand_value": "value of the cards left in hand", "multiplier": "multiplier",
                   "muamele_cards": "Muamele draws",
                   "muamele_points": "Muamele points", "total": "penalty", "went_out": "went out",
                   "end": "deal ended", "last_card": "last card"},
    "pishe_pasha": {"winner": "winner", "stock": "cards left in stock", "discard": "cards left in discard",
                    "turns": "turns", "truncated": "drawn (turn limit reached)"},
    "ish": {"stakes": "stake", "results": "result", "calls": "called", "reaction_times": "reaction time",
            "fines": "fine", "bankrolls": "bankroll", "eligible": "eligible", "winner": "winner",
            "void": "void round", "out": "out of the match", "eliminated": "went broke this round"},
}

#: per game: what the setup page says about the game, in player words (the games' ``summary`` is for developers)
SUMMARIES = {
    "pasur": "A Persian fishing game for 2 players. Play a card to take pool cards that add up to 11 with it; a "
             "king takes a king, a queen a queen, and a jack takes every numbered card and jack. Emptying the "
             "pool is a sur. Clubs, 10♦, 2♣, aces, jacks and surs score; six hands make a round.",
    "pishti": "A Turkish fishing game for 2 players, 4 players, or two partnerships. A card of the same rank as the "
              "pile's top card takes the whole pile, and so does a jack; taking a lone card is a pişti. Jacks, "
              "aces, 2♣, 10♦, the most cards and the piştis score.",
    "pis_yedili": "“Dirty Seven”, a shedding game for 2 to 4 players: follow the top card's suit or rank and get rid "
                  "of your cards. A 7 makes the next player draw 3 (unless they answer with a 7), a jack names a "
                  "suit, a 10 sends the turn back, an ace makes everyone else draw. The cards left in your hand "
                  "are penalty points: the lowest total wins.",
    "pishe_pasha": "A two-player race: empty your face-down stock and your discard pile onto four shared suit "
                   "piles (ace up to king), or onto your opponent's discard pile (one rank up or down). The "
                   "winner scores the cards the opponent has left.",
    "ish": "A betting game of pure luck on a 40-card sun deck. Everyone stakes and takes two face-down cards; every "
           "card is turned up, and the best result wins the pot, but only if its holder calls (“Paoy”, or “Kath” "
           "with the Crown). A player whose chips fall below the lowest stake is out.",
}

#: per game and setting: its label and help on the setup form, in player words (developers read rules.md), and
#: words for the options of a choice
SETTING_WORDS = {
    "pasur": {
        "target_score": ("points to win", "the match ends after a round in which someone reaches this"),
        "sur_value": ("points of a sur", "what each sur still standing at the end of a round is worth"),
        "sur_on_final_deal": ("surs in the last hand", "whether emptying the pool counts as a sur in the round's "
                                                       "sixth, last hand"),
        "sur_cancellation": ("a sur cancels one", "a sur cancels one of the opponent's instead of adding one"),
        "sur_cap": ("no surs near the end", "a player this close to winning scores no sur"),
        "sur_cap_threshold": ("…from this many points", "the total at the start of a round from which a player "
                                                       "scores no sur (with the rule above)"),
        "redeal_rule": ("deal again when the pool has", "which opening pools are dealt again",
                        {"standard": "2 jacks, or 3 queens or 3 kings", "jacks_only": "2 jacks"}),
        "tie_rule": ("equal totals at the end", "what happens when both reach the target with the same total",
                     {"extra_round": "play another round", "draw": "a draw"}),
        "max_rounds": ("at most this many rounds", "the match stops after this many rounds in any case"),
    },
    "pishti": {
        "players": ("players", "2 or 4 players"),
        "partnerships": ("partnerships", "with 4 players: you and the player opposite against the other two"),
        "target_score": ("points to win", "the match ends after a deal in which a side reaches this"),
        "pisti_value": ("points of a pişti", "taking a pile of one card"),
        "jack_pisti_value": ("points of a jack pişti", "a pişti made with a jack (see the next setting)"),
        "jack_double": ("jack piştis pay more", "which piştis made with a jack pay the jack pişti's points",
                        {"never": "never", "jack_on_jack": "a jack taking a lone jack", "any_jack": "any jack pişti"}),
        "majority_bonus": ("points for the most cards", "for the side that took the most cards (alone)"),
        "jack_on_empty_counts": ("a jack on an empty pile is a pişti", "a house rule"),
        "jack_on_lone_card_is_pisti": ("a jack taking a lone card is a pişti", "off: only matching ranks make "
                                                                               "piştis"),
        "two_clubs_value": ("points of 2♣", ""),
        "ten_diamonds_value": ("points of 10♦", ""),
        "tie_rule": ("equal totals at the end", "when two sides reach the target with the same total",
                     {"extra_deal": "play another deal", "shared_win": "they share the win"}),
        "max_deals": ("at most this many deals", "the match stops after this many deals in any case"),
    },
    "pis_yedili": {
        "players": ("players", "2 players play with one pack, 3 or 4 with two"),
        "game_end_penalty": ("penalty points that end the match", "after a deal in which someone reaches this, the "
                                                                  "lowest total wins"),
        "ten_rule": ("a 10", "what a 10 does to the turn",
                     {"bounce": "sends the turn back one player", "reverse": "reverses the direction of play"}),
        "after_seven_penalty": ("after taking a 7's cards", "",
                                {"continue": "you may still play or pass", "lose_turn": "your turn ends"}),
        "must_answer_seven": ("a 7 must be answered", "holding a 7, you must play it on a 7"),
        "twin_rule": ("a twin lets you play again", "playing a card onto its twin",
                      {"identical": "the identical card (two packs)", "same_rank": "any card of the same rank",
                       "off": "no twins"}),
        "jack_out_multiplier": ("going out on a jack multiplies by", "the other hands' penalty points"),
        "seven_out_multiplier": ("going out on a 7 multiplies by", "the other hands' penalty points"),
        "muamele": ("Muamele", "a player caught with sevens draws 3 cards blind for each and scores them too"),
        "muamele_multiplied": ("Muamele multiplied too", "the going-out multiplier applies to Muamele as well"),
        "muamele_on_exhaustion": ("Muamele when the stock runs out", "also when the deal ends with an empty stock"),
        "stock_end": ("the deal ends", "when the stock is used up",
                      {"when_empty": "as soon as the stock is empty", "on_failed_draw":
                       "when someone must draw from an empty stock"}),
        "max_deals": ("at most this many deals", "the match stops after this many deals in any case"),
    },
    "pishe_pasha": {
        "match_target": ("the match", "one deal, or the first to a number of points",
                         {"one_deal": "one deal", "50": "first to 50 points", "100": "first to 100 points"}),
        "give_compulsory": ("giving is compulsory", "a card that fits the opponent's pile must go there"),
        "rank_wrap": ("king and ace are neighbours", "for fitting a card onto the opponent's pile"),
        "max_turns": ("turns per deal", "a deal that reaches this many turns is a draw"),
        "max_deals": ("at most this many deals", "the match stops after this many deals in any case"),
    },
    "ish": {
        "players": ("players", "2 to 20 players"),
        "bankroll": ("chips to start with", ""),
        "min_bet": ("lowest stake", "a player with fewer chips is out"),
        "max_bet": ("highest stake", ""),
        "bet_levels": ("stakes to choose from", "how many stakes between the lowest and the highest"),
        "payout": ("the winner takes", "", {"pot": "the whole pot", "matched": "each other stake, matched"}),
        "card_selection": ("the face-down cards", "",
                           {"auto": "dealt to you", "agent": "you pick them from the table"}),
        "crown_must_call": ("the Crown must call", "off: the Crown's holder wins without calling"),
        "reflex": ("reaction time", "how fast each player calls (larger: slower)"),
        "false_call_fine": ("fine for a wrong call", "chips a player pays for calling without the best result"),
        "max_rounds": ("at most this many rounds", "the match stops after this many rounds in any case"),
    },
    "*": {
        "first_dealer": ("first dealer", "who deals the first deal", {"random": "drawn at random"}),
    },
}

#: settings a person does not choose at the web table (fixed to these values)
FIXED_SETTINGS = {"episode": "match", "skip_single_choice": True}
#: settings not shown at the table: how an episode is cut and paid, and whether forced moves are skipped, are no
#: house rules, the same settings a bot does not impose (agents/policies/bot.py NOT_IMPOSED)
HIDDEN_SETTINGS = NOT_IMPOSED


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
    texts = state.move_texts(seat, start, {p: "" for p in range(state.num_players)})
    names = names or seat_names(state.num_players, seat, list(state.game.sides))
    out = []
    for k, (m, text) in enumerate(zip(log[start:], texts)):
        if m.seat is not None:
            text = text[2:]                        # the empty name's ": " (the page shows who apart)
        # "forced" only where this seat could tell (Move.forced_for): an opponent's forced Pis Yedili draw is
        # a plain draw here, as it is in the text
        out.append({"i": start + k, "seat": m.seat, "who": None if m.seat is None else names[m.seat],
                    "text": text, "forced": m.forced_for(seat), "deal": m.deal + 1})
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
        words = SETTING_WORDS.get(game_name, {}).get(s.name) or SETTING_WORDS["*"].get(s.name)
        label, help_text, options = (words + ({},))[:3] if words else (s.name.replace("_", " "), "", {})
        f = {"name": s.name, "label": label, "help": help_text, "default": _plain(s.default),
             "option_labels": {str(k): v for k, v in options.items()}, "doc": s.doc, "allowed": s.allowed()}
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


def player_words(game_name: str, message: str) -> str:
    """A settings error as the setup page shows it: each setting named by its label on the form ("setting
    'target_score': 5 is not allowed" -> "“points to win”: 5 is not allowed")."""
    import re
    words = {**SETTING_WORDS["*"], **SETTING_WORDS.get(game_name, {})}

    def label(m):
        w = words.get(m.group(2))
        return f"“{w[0]}”" if w else m.group(0)

    return re.sub(r"(setting )?'(\w+)'", label, message)


# ----- the player guide -----------------------------------------------------------------------------------------
def guide(game) -> dict:
    """The player guide of ``game`` with its settings (the text ``kahve play`` shows on ``?``) as plain blocks for
    the page: ``{"title", "blocks": [{"kind": "h2" | "p" | "li", "text"}]}``; texts keep the guide's card codes
    and ``*emphasis*``, and the house settings in force are one item each."""
    import re

    from kahve.envs.core.guide import player_guide
    blocks, title, para = [], game.title, []

    def flush():
        if para:
            blocks.append({"kind": "p", "text": " ".join(para)})
            para.clear()

    house = item = False
    for line in player_guide(game).splitlines():
        line = line.replace("`", "").strip()
        if not line:
            flush()
            item = False
            continue
        m = re.match(r"^(#+) (.*)", line)
        if m:
            flush()
            if len(m.group(1)) == 1:
                title = m.group(2)
            else:
                blocks.append({"kind": "h2", "text": m.group(2)})
            house = m.group(2).lower().startswith("house settings")
            continue
        if line.startswith("- "):
            flush()
            blocks.append({"kind": "li", "text": line[2:]})
            item = True
        elif item:
            blocks[-1]["text"] += " " + line              # a list item's wrapped line
        elif house:                                       # "A; b; c." as one item each
            for phrase in line.rstrip(".").split("; "):
                blocks.append({"kind": "li", "text": phrase[:1].upper() + phrase[1:] + "."})
        else:
            para.append(line)
    flush()
    return {"game": game.name, "title": title, "blocks": blocks}
