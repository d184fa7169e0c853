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
    "pasur": [],
    "pis_yedili": [],
    "pishe_pasha": [],
    "ish": [],
}
