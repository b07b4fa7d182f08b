"""Diagnostics as each strategy's writer put them in a verdict before they were typed, key for key:
what the results.jsonl rows and trajectories of an older run folder hold."""

from __future__ import annotations

from typing import Any

OLD_DEBATE: dict[str, Any] = {
    "stop_reason": "consensus in round 1", "rounds": 1, "consensus_round": 1, "answer_changes": {"a": 0, "b": 0},
    "first_round_majority": "fake", "overturned_first_round_majority": False, "queries_answered": 0,
    "decided_by": "consensus", "answer": {"taxonomy": "binary", "label": "fake"},
    "selection": {
        "escalated": True, "planner": {"level": 1, "error": None},
        "best_of_n_turns": [{
            "speaker": "a", "round": 1, "n": 3, "readable_candidates": 3, "m_star": 2, "chosen": 1,
            "scores": [{"candidate": 0, "u": 0.5, "q": None, "s": 0.5, "errors": []}],
            "saved_calls": {"reward": 1, "critique": 0}, "reward": "llm_judge", "critic": None, "note": "",
        }],
        "single_pass_turns": 0, "m_star": [2], "saved_calls": {"reward": 1, "critique": 0, "total": 1},
    },
    "image_descriptions": ["OCR: no text"],
    "wall_time_s": 2.5,
}
OLD_CHECK = {"attempts": 2, "wall_time_s": 0.4}
OLD_SELF_CONSISTENCY = {"votes": {"fake": 2}, "readable": 2, "n": 3, "decided_by": "majority", "wall_time_s": 1.0}
OLD_FACTGUARD = {
    "turns": 2, "tool_calls": {"clip_scout": 1}, "used_tools": True, "tool_refusals": {}, "tool_stats": {"frames": 4},
    "video_seen": True, "format_ok": True,
    "agent_turns": [{"attempts": 1, "error": None, "tool_calls": [{"name": "clip_scout", "arguments": {"start_s": 0}}],
                     "answer": None, "lenient": []}],
    "stop_reason": "answered", "teacher_hint": "the gold label is fake", "wall_time_s": 3.0,
}
OLD_AGENTFACT = {
    "setting": "open_web", "stop_reason": "confident", "steps": 4, "plans": 1, "queries": ["q"],
    "leakage": {"factcheck_domain": 1}, "dropped_citations": {"explainer": 0}, "label_2class_model": "false",
    "label_2class_disagrees": False, "explainer_attempts": 1,
    "pool": [{"id": "E1", "evidence_id": "ev-1", "kept": True, "useful": True, "reliability": "high",
              "source": "https://a.example/x", "reason": ""}],
    "errors": [], "wall_time_s": 9.0,
}
NODE = {"id": 0, "kind": "root", "subtask": None, "depth": 0, "visits": 1, "value": 0.0, "children": []}
OLD_T2AGENT = {
    "stop_reason": "K iterations spent (K = 1)", "iterations": 1, "decided_by": "fusion",
    "search": {
        "uct": "eq3", "settings": {"iterations": 1}, "priors": {"source": "uniform", "values": {"text": 1.0}},
        "iterations": 1, "stop_reason": "K iterations spent (K = 1)", "pruned": [], "early_stop": None,
        "decided_by": "fusion", "p_real": 0.8, "p_fake": {"text": 0.2}, "tree_size": 1, "dead_steps": 0,
        "missing_scores": {}, "reused_scores": 0, "unscored_steps": 0, "tools": {}, "subtasks": [],
        "path_per_iteration": [[0]], "tree": NODE,
    },
    "wall_time_s": 5.0,
}
