"""Representative settings per game for the conformance tests (CLARIFICATIONS: every table size, every option
of each choice-valued setting once, not every combination). Each game owns its own entry."""

GRIDS = {
    "pishti": [
        dict(players=2),
        dict(players=4, partnerships=False),
        dict(players=4, partnerships=True),
        dict(players=2, jack_double="never", jack_on_empty_counts=True, tie_rule="shared_win"),
        dict(players=2, jack_double="any_jack", jack_on_lone_card_is_pisti=False, episode="deal"),
        dict(players=4, partnerships=False, reward="points", first_dealer="random", skip_single_choice=False),
        dict(players=2, two_clubs_value=3, ten_diamonds_value=4, majority_bonus=0, target_score=50),
    ],
    "pasur": [
        dict(),
        dict(skip_single_choice=False, tie_rule="draw", target_score=20),
        dict(episode="deal", reward="points", first_dealer="random"),
        dict(redeal_rule="jacks_only", sur_cancellation=False, sur_on_final_deal=True, max_rounds=2),
        dict(sur_cap=True, sur_cap_threshold=10, target_score=40, sur_value=10),
        dict(reward="points", first_dealer=1, max_rounds=3, target_score=200),
    ],
    "pis_yedili": [
        dict(players=2),
        dict(players=3, ten_rule="reverse", twin_rule="same_rank"),
        dict(players=4),
        dict(players=4, after_seven_penalty="lose_turn", must_answer_seven=True, twin_rule="off",
             stock_end="on_failed_draw"),
        dict(players=2, episode="deal", reward="points", muamele_multiplied=True, muamele_on_exhaustion=True),
        dict(players=3, first_dealer="random", skip_single_choice=False, muamele=False, game_end_penalty=50),
        dict(players=2, jack_out_multiplier=5, seven_out_multiplier=1, max_deals=3, stock_end="on_failed_draw"),
    ],
    "pishe_pasha": [
        dict(),
        dict(match_target=50, first_dealer=1),
        dict(match_target=100, reward="points", rank_wrap=True),
        dict(give_compulsory=True, skip_single_choice=False, first_dealer="random"),
        dict(give_compulsory=True, skip_single_choice=False, match_target=100, episode="deal"),
        dict(episode="deal", skip_single_choice=False),
        dict(match_target=50, max_turns=30, max_deals=3, reward="points"),
    ],
    "ish": [
        dict(players=2),
        dict(players=4),
        dict(players=20),
        dict(players=4, payout="matched", card_selection="agent", crown_must_call=False),
        dict(players=3, bankroll=10, min_bet=2, max_bet=10, reward="outcome", false_call_fine=3),
        dict(players=2, reward="outcome", episode="deal", first_dealer="random", skip_single_choice=False,
             bet_levels=4, max_bet=2, reflex=[1.0, 2.5]),
        dict(players=20, card_selection="agent", bankroll=5, max_bet=5, reward="outcome", max_rounds=30),
    ],
}
