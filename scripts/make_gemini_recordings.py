r"""Write recordings/gemini/*.sse: our own realistic Gemini streams, one feature set per file.

Framing is what the Gemini API sends: one ``data: <json>`` line per chunk, chunks separated by
``\\r\\n\\r\\n``, no terminator. Run: ``python scripts/make_gemini_recordings.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "recordings" / "gemini"


def _sig(seed: str, size: int) -> str:
    """A realistic-looking opaque signature: base64 of deterministic bytes."""
    raw = b"".join(hashlib.sha256(f"{seed}{i}".encode()).digest() for i in range(size // 32 + 1))[:size]
    return base64.b64encode(b"\x12" + raw).decode()


SIG_A = _sig("a", 120)
SIG_B = _sig("b", 301)
SIG_C = _sig("c", 64)


def chunk(
    parts: list[dict[str, Any]] | None,
    *,
    rid: str,
    model: str = "gemini-3.5-flash",
    index: int | None = 0,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    **cand: Any,
) -> dict[str, Any]:
    """One chunk with one candidate."""
    candidate: dict[str, Any] = {}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    if index is not None:
        candidate["index"] = index
    candidate.update(cand)
    body: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        body["usageMetadata"] = usage
    body["modelVersion"] = model
    body["responseId"] = rid
    return body


def write(name: str, chunks: list[dict[str, Any]]) -> None:
    """Write one recording with Gemini's framing."""
    data = "".join(
        "data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + "\r\n\r\n" for c in chunks
    )
    (OUT / f"{name}.sse").write_bytes(data.encode())


def u(prompt: int, cand: int | None = None, thoughts: int | None = None, **extra: Any) -> dict[str, Any]:
    """A ``usageMetadata`` object."""
    body: dict[str, Any] = {"promptTokenCount": prompt}
    if cand is not None:
        body["candidatesTokenCount"] = cand
    body["totalTokenCount"] = prompt + (cand or 0) + (thoughts or 0)
    if thoughts is not None:
        body["thoughtsTokenCount"] = thoughts
    body.update(extra)
    return body


def main() -> None:
    """Write every recording."""
    OUT.mkdir(parents=True, exist_ok=True)
    r = "rsp_8kQ2mTz"
    write(
        "thoughts_text_parallel_calls",
        [
            chunk(
                [
                    {
                        "text": "**Planning lookups** Two independent cities, so both calls go out together.",
                        "thought": True,
                    }
                ],
                rid=r,
                usage=u(52),
            ),
            chunk(
                [{"text": "**Checking units** Celsius was asked for.", "thought": True}], rid=r, usage=u(52)
            ),
            chunk([{"text": "Checking both "}], rid=r, usage=u(52)),
            chunk([{"text": "cities now — un moment ☀️."}], rid=r, usage=u(52)),
            chunk(
                [
                    {
                        "functionCall": {
                            "id": "fc_p1",
                            "name": "get_weather",
                            "args": {"city": "Paris", "unit": "c"},
                        },
                        "thoughtSignature": SIG_A,
                    },
                    {
                        "functionCall": {
                            "id": "fc_o2",
                            "name": "get_weather",
                            "args": {"city": "Oslo", "unit": "c"},
                        }
                    },
                ],
                rid=r,
                finish="STOP",
                usage=u(52, 31, 96, promptTokensDetails=[{"modality": "TEXT", "tokenCount": 52}]),
            ),
        ],
    )
    r = "rsp_noIds4Fq"
    write(
        "parallel_same_name_no_ids",
        [
            chunk(
                [
                    {
                        "functionCall": {"name": "lookup_order", "args": {"order": "A-17"}},
                        "thoughtSignature": SIG_B,
                    }
                ],
                rid=r,
                model="gemini-3-pro-preview",
                usage=u(40, 8, 120),
            ),
            chunk(
                [{"functionCall": {"name": "lookup_order", "args": {"order": "B-22"}}}],
                rid=r,
                model="gemini-3-pro-preview",
                usage=u(40, 16, 120),
            ),
            chunk([{"text": ""}], rid=r, model="gemini-3-pro-preview", finish="STOP", usage=u(40, 16, 120)),
        ],
    )
    r = "rsp_trailSig1"
    write(
        "text_trailing_signature",
        [
            chunk(
                [{"text": "There are **three** r's in "}],
                rid=r,
                model="gemini-3-pro-preview",
                usage=u(9, 6, 300),
            ),
            chunk([{"text": "“strawberry”."}], rid=r, model="gemini-3-pro-preview", usage=u(9, 12, 300)),
            chunk(
                [{"text": "", "thoughtSignature": SIG_C}],
                rid=r,
                model="gemini-3-pro-preview",
                finish="STOP",
                usage=u(9, 12, 300, cachedContentTokenCount=4),
            ),
        ],
    )
    r = "vtx_streamArgs9"
    vt: dict[str, Any] = {"model": "gemini-3.1-pro-preview"}
    write(
        "vertex_streamed_args",
        [
            chunk(
                [{"functionCall": {"name": "plan_trip", "willContinue": True}, "thoughtSignature": SIG_A}],
                rid=r,
                index=None,
                usage={"trafficType": "ON_DEMAND"},
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.trip.city", "stringValue": "Kyo", "willContinue": True}
                            ],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.trip.city", "stringValue": 'to "old" town'}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.trip.days", "numberValue": 4}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.trip.stops[0].name", "stringValue": "Fushimi Inari"}
                            ],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.trip.stops[0].paid", "boolValue": False}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk([{"functionCall": {"willContinue": True}}], rid=r, index=None, **vt),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.trip.stops[1].name", "stringValue": "Kinkaku-ji"}
                            ],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.trip.stops[1].paid", "boolValue": True}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.notes", "nullValue": "NULL_VALUE"}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk([{"functionCall": {}}], rid=r, index=None, **vt),
            chunk([{"functionCall": {"name": "get_time", "willContinue": True}}], rid=r, index=None, **vt),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.tz", "stringValue": "Asia/Tokyo"}],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
                index=None,
                **vt,
            ),
            chunk(
                [{"functionCall": {}}],
                rid=r,
                index=None,
                finish="STOP",
                usage=u(61, 40, 210, trafficType="ON_DEMAND"),
                **vt,
            ),
        ],
    )
    r = "vtx_cutCall2"
    write(
        "streamed_call_cut",
        [
            chunk([{"text": "Writing the items now."}], rid=r, usage=u(30)),
            chunk(
                [{"functionCall": {"name": "write_items", "willContinue": True}, "thoughtSignature": SIG_B}],
                rid=r,
            ),
            chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.items[0]", "stringValue": "apple", "willContinue": True}
                            ],
                            "willContinue": True,
                        }
                    }
                ],
                rid=r,
            ),
        ],
    )
    r = "rsp_media77"
    write(
        "media_parts",
        [
            chunk(
                [{"text": "Here is the chart and a spoken summary."}], rid=r, model="gemini-2.5-flash-image"
            ),
            chunk(
                [
                    {
                        "inlineData": {
                            "mimeType": "image/png",
                            "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==",
                        },
                        "thoughtSignature": SIG_C,
                    }
                ],
                rid=r,
                model="gemini-2.5-flash-image",
            ),
            chunk(
                [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AAABAAIAAwAEAAUA"}}],
                rid=r,
                model="gemini-2.5-flash-image",
            ),
            chunk(
                [
                    {
                        "fileData": {
                            "mimeType": "application/pdf",
                            "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/report-42",
                        }
                    }
                ],
                rid=r,
                model="gemini-2.5-flash-image",
                finish="STOP",
                usage=u(12, 1290),
            ),
        ],
    )
    r = "rsp_codeExec3"
    write(
        "code_execution",
        [
            chunk(
                [
                    {
                        "executableCode": {
                            "language": "PYTHON",
                            "code": "print(sum(range(101)))",
                            "id": "ex_1",
                        },
                        "thoughtSignature": SIG_A,
                    }
                ],
                rid=r,
                model="gemini-3-flash-preview",
            ),
            chunk(
                [{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "5050\n", "id": "ex_1"}}],
                rid=r,
                model="gemini-3-flash-preview",
            ),
            chunk([{"text": "The sum of 0..100 is **5050**."}], rid=r, model="gemini-3-flash-preview"),
            chunk(
                [{"text": "", "thoughtSignature": SIG_B}],
                rid=r,
                model="gemini-3-flash-preview",
                finish="STOP",
                usage=u(46, 57, 67, toolUsePromptTokenCount=360),
            ),
        ],
    )
    r = "rsp_ground5"
    grounding = {
        "webSearchQueries": ["tallest building Tokyo 2026"],
        "groundingChunks": [
            {"web": {"uri": "https://example.org/azabudai", "title": "example.org"}},
            {"web": {"uri": "https://example.com/skyline", "title": "example.com"}},
        ],
        "groundingSupports": [
            {
                "segment": {
                    "startIndex": 0,
                    "endIndex": 48,
                    "text": "Azabudai Hills Mori JP Tower is the tallest.",
                },
                "groundingChunkIndices": [0, 1],
                "confidenceScores": [0.91, 0.72],
            }
        ],
        "searchEntryPoint": {"renderedContent": '<div class="chip">tallest building Tokyo</div>'},
    }
    write(
        "server_tools_grounding",
        [
            chunk(
                [
                    {
                        "toolCall": {
                            "toolType": "GOOGLE_SEARCH_WEB",
                            "args": {"queries": ["tallest building Tokyo 2026"]},
                            "id": "st_1",
                        },
                        "thoughtSignature": SIG_A,
                    }
                ],
                rid=r,
                model="gemini-3-flash-preview",
            ),
            chunk(
                [
                    {
                        "toolResponse": {
                            "toolType": "GOOGLE_SEARCH_WEB",
                            "response": {"results": 2},
                            "id": "st_1",
                        },
                        "thoughtSignature": SIG_B,
                    }
                ],
                rid=r,
                model="gemini-3-flash-preview",
            ),
            chunk(
                [{"text": "Azabudai Hills Mori JP Tower is the tallest."}],
                rid=r,
                model="gemini-3-flash-preview",
                groundingMetadata={},
            ),
            chunk(
                [{"text": " It opened in 2023."}],
                rid=r,
                model="gemini-3-flash-preview",
                finish="STOP",
                groundingMetadata=grounding,
                citationMetadata={
                    "citationSources": [
                        {
                            "startIndex": 0,
                            "endIndex": 44,
                            "uri": "https://example.org/azabudai",
                            "license": "",
                        }
                    ]
                },
                safetyRatings=[{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "NEGLIGIBLE"}],
                usage=u(20, 30, 80, toolUsePromptTokenCount=150),
            ),
        ],
    )
    r = "rsp_maxTok6"
    write(
        "max_tokens",
        [
            chunk([{"text": "Chapter one. It was a dark and"}], rid=r, usage=u(8, 8)),
            chunk([{"text": " stormy"}], rid=r, finish="MAX_TOKENS", usage=u(8, 10)),
        ],
    )
    write(
        "prompt_blocked",
        [
            {
                "promptFeedback": {
                    "blockReason": "PROHIBITED_CONTENT",
                    "safetyRatings": [
                        {
                            "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                            "probability": "HIGH",
                            "blocked": True,
                        }
                    ],
                },
                "usageMetadata": {"promptTokenCount": 14, "totalTokenCount": 14},
                "modelVersion": "gemini-2.5-pro",
                "responseId": "rsp_block7",
            },
        ],
    )
    r = "rsp_safety8"
    write(
        "safety_finish",
        [
            chunk([{"text": "I can describe the general"}], rid=r),
            chunk(
                None,
                rid=r,
                finish="SAFETY",
                safetyRatings=[
                    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "MEDIUM", "blocked": True}
                ],
                usage=u(11, 5),
            ),
        ],
    )
    r = "rsp_err9"
    write(
        "error_midstream",
        [
            chunk([{"text": "Partial answer before the "}], rid=r),
            {
                "error": {
                    "code": 503,
                    "message": "The model is overloaded. Please try again later.",
                    "status": "UNAVAILABLE",
                }
            },
        ],
    )
    r = "rsp_twoCand"
    write(
        "two_candidates",
        [
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": "Blue"}]}, "index": 0},
                    {"content": {"role": "model", "parts": [{"text": "Azure"}]}, "index": 1},
                ],
                "modelVersion": "gemini-2.5-flash",
                "responseId": r,
            },
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": " sky."}]},
                        "index": 0,
                        "finishReason": "STOP",
                    }
                ],
                "modelVersion": "gemini-2.5-flash",
                "responseId": r,
            },
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"functionCall": {"name": "paint", "args": {"color": "azure"}}}],
                        },
                        "index": 1,
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": u(6, 9),
                "modelVersion": "gemini-2.5-flash",
                "responseId": r,
            },
        ],
    )
    r = "rsp_snake10"
    write(
        "snake_case_fields",
        [
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"text": "Thinking about it.", "thought": True}],
                        },
                        "index": 0,
                    }
                ],
                "model_version": "gemini-2.5-pro",
                "response_id": r,
            },
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {
                                    "function_call": {
                                        "name": "set_alarm",
                                        "args": {"wake_time": "07:00", "snooze_min": 5},
                                    },
                                    "thought_signature": SIG_C,
                                }
                            ],
                        },
                        "index": 0,
                        "finish_reason": "STOP",
                    }
                ],
                "usage_metadata": {
                    "prompt_token_count": 10,
                    "candidates_token_count": 4,
                    "thoughts_token_count": 12,
                    "total_token_count": 26,
                },
                "model_version": "gemini-2.5-pro",
                "response_id": r,
            },
        ],
    )
    r = "rsp_unknown11"
    write(
        "unknown_part_and_malformed_call",
        [
            chunk([{"text": "Let me try that."}], rid=r),
            chunk([{"hologram": {"uri": "holo://scene/1", "frames": 3}}], rid=r),
            chunk(
                None,
                rid=r,
                finish="MALFORMED_FUNCTION_CALL",
                finishMessage="Malformed function call: call_tool(",
                usage=u(15, 7),
            ),
        ],
    )


if __name__ == "__main__":
    main()
