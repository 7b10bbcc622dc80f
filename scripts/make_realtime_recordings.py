"""Write this project's own recordings for google-interactions, google-live and openai-realtime.

Run from the repository root: ``python scripts/make_realtime_recordings.py``. Every stream is
hand-written here (realistic shapes from PROTOCOLS.md §5-§6 and the openai SDK types) to
exercise one feature each; nothing is copied from the corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent / "recordings"


def sse(events: list[tuple[str, dict[str, Any]] | str]) -> bytes:
    """SSE bytes for (event, body) pairs; a plain string is a bare data line."""
    out = []
    for i, ev in enumerate(events):
        if isinstance(ev, str):
            out.append(f"data: {ev}\n\n")
            continue
        name, body = ev
        body = {**body, "event_type": name, "event_id": f"ev_{i + 1}"}
        out.append(f"event: {name}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def jsonl(frames: list[tuple[str, dict[str, Any]]]) -> bytes:
    """JSON lines for (direction, message) pairs."""
    return "".join(json.dumps({"dir": d, "msg": m}, separators=(",", ":")) + "\n" for d, m in frames).encode()


def write(protocol: str, name: str, data: bytes) -> None:
    """Write one recording."""
    folder = ROOT / protocol
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


# ---------------------------------------------------------------- google-interactions

INTER = {"id": "v1_maasA1", "object": "interaction", "status": "in_progress", "model": "gemini-3.5-flash"}
USAGE = {"total_input_tokens": 52, "total_output_tokens": 31, "total_thought_tokens": 96, "total_tokens": 179}


def interactions() -> None:
    """Google Interactions recordings."""
    write(
        "google-interactions",
        "parallel_calls_thought_summary.sse",
        sse(
            [
                ("interaction.created", {"interaction": INTER}),
                ("interaction.status_update", {"interaction_id": "v1_maasA1", "status": "in_progress"}),
                ("step.start", {"index": 0, "step": {"type": "thought"}}),
                (
                    "step.delta",
                    {
                        "index": 0,
                        "delta": {
                            "type": "thought_summary",
                            "content": {"type": "text", "text": "Two lookups; "},
                        },
                    },
                ),
                (
                    "step.delta",
                    {
                        "index": 0,
                        "delta": {
                            "type": "thought_summary",
                            "content": {"type": "text", "text": "run them together."},
                        },
                    },
                ),
                (
                    "step.delta",
                    {"index": 0, "delta": {"type": "thought_signature", "signature": "EpQBCkQopaque+/=="}},
                ),
                ("step.stop", {"index": 0}),
                ("step.start", {"index": 1, "step": {"type": "model_output", "content": []}}),
                ("step.delta", {"index": 1, "delta": {"type": "text", "text": "Checking both "}}),
                ("step.delta", {"index": 1, "delta": {"type": "text", "text": "cities now. é✓"}}),
                ("step.stop", {"index": 1}),
                (
                    "step.start",
                    {
                        "index": 2,
                        "step": {
                            "type": "function_call",
                            "id": "call_p1",
                            "name": "get_weather",
                            "arguments": {},
                        },
                    },
                ),
                ("step.delta", {"index": 2, "delta": {"type": "arguments_delta", "arguments": '{"city":'}}),
                ("step.delta", {"index": 2, "delta": {"type": "arguments_delta", "arguments": '"Paris"}'}}),
                ("step.stop", {"index": 2}),
                (
                    "step.start",
                    {
                        "index": 3,
                        "step": {
                            "type": "function_call",
                            "id": "call_o2",
                            "name": "get_weather",
                            "arguments": {"city": "Oslo"},
                        },
                    },
                ),
                ("step.stop", {"index": 3}),
                ("interaction.status_update", {"interaction_id": "v1_maasA1", "status": "requires_action"}),
                (
                    "interaction.completed",
                    {"interaction": {**INTER, "status": "requires_action", "usage": USAGE}},
                ),
            ]
        ),
    )
    legacy = {"id": "v1_legacyB2", "object": "interaction", "status": "in_progress", "model": "gemini-3-pro"}
    write(
        "google-interactions",
        "legacy_schema.sse",
        sse(
            [
                ("interaction.start", {"interaction": legacy}),
                ("content.start", {"index": 0, "content": {"type": "thought"}}),
                (
                    "content.delta",
                    {
                        "index": 0,
                        "delta": {
                            "type": "thought_summary",
                            "content": {"type": "text", "text": "User wants a haiku."},
                        },
                    },
                ),
                (
                    "content.delta",
                    {"index": 0, "delta": {"type": "thought_signature", "signature": "Cq0BLegacySig=="}},
                ),
                ("content.stop", {"index": 0}),
                ("content.start", {"index": 1, "content": {"type": "text", "text": ""}}),
                ("content.delta", {"index": 1, "delta": {"type": "text", "text": "Autumn wind rises"}}),
                ("content.delta", {"index": 1, "delta": {"type": "text", "text": " — leaves answer."}}),
                ("content.stop", {"index": 1}),
                ("content.start", {"index": 2, "content": {"type": "function_call"}}),
                (
                    "content.delta",
                    {
                        "index": 2,
                        "delta": {
                            "type": "function_call",
                            "id": "fc_9",
                            "name": "save_poem",
                            "arguments": {"title": "Wind"},
                            "signature": "FcSig==",
                        },
                    },
                ),
                ("content.stop", {"index": 2}),
                (
                    "interaction.complete",
                    {
                        "interaction": {
                            **legacy,
                            "status": "requires_action",
                            "outputs": [],
                            "usage": {"total_input_tokens": 9, "total_output_tokens": 20, "total_tokens": 29},
                        }
                    },
                ),
            ]
        ),
    )
    code_call = {"type": "code_execution_call", "id": "ce_1", "signature": ""}
    write(
        "google-interactions",
        "builtin_tools_annotations_image.sse",
        sse(
            [
                ("interaction.created", {"interaction": {**INTER, "id": "v1_tools"}}),
                ("step.start", {"index": 0, "step": code_call}),
                (
                    "step.delta",
                    {
                        "index": 0,
                        "delta": {
                            "type": "code_execution_call",
                            "arguments": {"code": "print(2**10)", "language": "python"},
                        },
                    },
                ),
                ("step.stop", {"index": 0}),
                (
                    "step.start",
                    {
                        "index": 1,
                        "step": {"type": "code_execution_result", "call_id": "ce_1", "signature": ""},
                    },
                ),
                (
                    "step.delta",
                    {
                        "index": 1,
                        "delta": {"type": "code_execution_result", "result": "1024\n", "is_error": False},
                    },
                ),
                ("step.stop", {"index": 1}),
                (
                    "step.start",
                    {
                        "index": 2,
                        "step": {
                            "type": "url_context_call",
                            "id": "uc_1",
                            "arguments": {"urls": ["https://example.com/a"]},
                        },
                    },
                ),
                ("step.stop", {"index": 2}),
                (
                    "step.start",
                    {
                        "index": 3,
                        "step": {
                            "type": "url_context_result",
                            "call_id": "uc_1",
                            "result": [{"url": "https://example.com/a", "status": "success"}],
                        },
                    },
                ),
                ("step.stop", {"index": 3}),
                ("step.start", {"index": 4, "step": {"type": "model_output"}}),
                (
                    "step.delta",
                    {"index": 4, "delta": {"type": "text", "text": "2^10 is 1024, as the page says."}},
                ),
                (
                    "step.delta",
                    {
                        "index": 4,
                        "delta": {
                            "type": "text_annotation_delta",
                            "annotations": [
                                {
                                    "type": "url_citation",
                                    "url": "https://example.com/a",
                                    "title": "A",
                                    "start_index": 0,
                                    "end_index": 12,
                                },
                                {
                                    "type": "file_citation",
                                    "document_uri": "files/abc",
                                    "file_name": "notes.pdf",
                                    "page_number": 3,
                                    "start_index": 13,
                                    "end_index": 30,
                                },
                            ],
                        },
                    },
                ),
                (
                    "step.delta",
                    {
                        "index": 4,
                        "delta": {"type": "image", "data": "iVBORw0KGgo=", "mime_type": "image/png"},
                    },
                ),
                ("step.delta", {"index": 4, "delta": {"type": "text", "text": " Chart above."}}),
                ("step.stop", {"index": 4}),
                ("step.start", {"index": 5, "step": {"type": "brand_new_step", "payload": {"x": 1}}}),
                ("step.stop", {"index": 5}),
                (
                    "interaction.completed",
                    {
                        "interaction": {
                            "id": "v1_tools",
                            "object": "interaction",
                            "status": "completed",
                            "usage": USAGE,
                        }
                    },
                ),
                "[DONE]",
            ]
        ),
    )
    write(
        "google-interactions",
        "mcp_call_and_result.sse",
        sse(
            [
                ("interaction.created", {"interaction": {**INTER, "id": "v1_mcp"}}),
                (
                    "step.start",
                    {
                        "index": 0,
                        "step": {
                            "type": "mcp_server_tool_call",
                            "id": "mcp_1",
                            "name": "search_docs",
                            "server_name": "docs",
                            "arguments": {},
                        },
                    },
                ),
                (
                    "step.delta",
                    {"index": 0, "delta": {"type": "arguments_delta", "arguments": '{"q":"sse"}'}},
                ),
                ("step.stop", {"index": 0}),
                (
                    "step.start",
                    {
                        "index": 1,
                        "step": {
                            "type": "mcp_server_tool_result",
                            "call_id": "mcp_1",
                            "name": "search_docs",
                            "server_name": "docs",
                            "result": [{"type": "text", "text": "SSE is..."}],
                        },
                    },
                ),
                ("step.stop", {"index": 1}),
                ("step.start", {"index": 2, "step": {"type": "model_output"}}),
                ("step.delta", {"index": 2, "delta": {"type": "text", "text": "Found it."}}),
                ("step.stop", {"index": 2}),
                (
                    "interaction.completed",
                    {"interaction": {"id": "v1_mcp", "status": "completed", "usage": {"total_tokens": 40}}},
                ),
            ]
        ),
    )
    write(
        "google-interactions",
        "error_midstream.sse",
        sse(
            [
                ("interaction.created", {"interaction": {**INTER, "id": "v1_err"}}),
                ("step.start", {"index": 0, "step": {"type": "model_output"}}),
                ("step.delta", {"index": 0, "delta": {"type": "text", "text": "Partial answer"}}),
                (
                    "error",
                    {
                        "error": {
                            "code": "https://aip.dev/errors/RESOURCE_EXHAUSTED",
                            "message": "quota exceeded",
                        }
                    },
                ),
            ]
        ),
    )
    write(
        "google-interactions",
        "cut_mid_arguments.sse",
        sse(
            [
                ("interaction.created", {"interaction": {**INTER, "id": "v1_cut"}}),
                (
                    "step.start",
                    {
                        "index": 0,
                        "step": {"type": "function_call", "id": "call_c", "name": "lookup", "arguments": {}},
                    },
                ),
                (
                    "step.delta",
                    {"index": 0, "delta": {"type": "arguments_delta", "arguments": '{"term": "hal'}},
                ),
            ]
        ),
    )
    write(
        "google-interactions",
        "failed_status.sse",
        sse(
            [
                ("interaction.created", {"interaction": {**INTER, "id": "v1_failed"}}),
                ("step.start", {"index": 0, "step": {"type": "thought", "signature": "StartSig=="}}),
                ("step.stop", {"index": 0}),
                (
                    "interaction.completed",
                    {
                        "interaction": {
                            "id": "v1_failed",
                            "status": "failed",
                            "errors": [{"code": "INTERNAL", "message": "backend error"}],
                        }
                    },
                ),
            ]
        ),
    )


# ---------------------------------------------------------------- google-live

SETUP = {
    "setup": {
        "model": "models/gemini-live-2.5-flash-preview",
        "generationConfig": {"responseModalities": ["TEXT"], "thinkingConfig": {"includeThoughts": True}},
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]}],
    }
}


def live() -> None:
    """Google Live recordings."""
    write(
        "google-live",
        "text_thought_parallel_tools.jsonl",
        jsonl(
            [
                ("client", SETUP),
                ("server", {"setupComplete": {}}),
                (
                    "client",
                    {
                        "clientContent": {
                            "turns": [{"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]}],
                            "turnComplete": True,
                        }
                    },
                ),
                (
                    "server",
                    {"serverContent": {"modelTurn": {"parts": [{"text": "Two lookups; ", "thought": True}]}}},
                ),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [
                                    {
                                        "text": "ask for both at once.",
                                        "thought": True,
                                        "thoughtSignature": "TGl2ZVNpZw==",
                                    }
                                ]
                            }
                        }
                    },
                ),
                (
                    "server",
                    {"serverContent": {"modelTurn": {"parts": [{"text": "Checking both cities now."}]}}},
                ),
                (
                    "server",
                    {
                        "toolCall": {
                            "functionCalls": [
                                {"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}},
                                {"id": "fc-2", "name": "get_weather", "args": {"city": "Oslo"}},
                            ]
                        }
                    },
                ),
                (
                    "client",
                    {
                        "toolResponse": {
                            "functionResponses": [
                                {"id": "fc-1", "name": "get_weather", "response": {"output": {"temp_c": 18}}},
                                {"id": "fc-2", "name": "get_weather", "response": {"output": {"temp_c": 9}}},
                            ]
                        }
                    },
                ),
                ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "Paris 18°C, "}]}}}),
                ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "Oslo 9°C."}]}}}),
                ("server", {"serverContent": {"generationComplete": True}}),
                (
                    "server",
                    {
                        "serverContent": {"turnComplete": True},
                        "usageMetadata": {
                            "promptTokenCount": 61,
                            "responseTokenCount": 24,
                            "thoughtsTokenCount": 40,
                            "totalTokenCount": 125,
                        },
                    },
                ),
                ("server", {"sessionResumptionUpdate": {"newHandle": "h_9f2", "resumable": True}}),
            ]
        ),
    )
    audio = "AAAAAP//AQD+/w=="
    write(
        "google-live",
        "interrupted_cancelled_call.jsonl",
        jsonl(
            [
                (
                    "client",
                    {
                        "setup": {
                            "model": "models/gemini-2.5-flash-native-audio",
                            "generationConfig": {"responseModalities": ["AUDIO"]},
                            "outputAudioTranscription": {},
                        }
                    },
                ),
                ("server", {"setupComplete": {"sessionId": "sess-live-7"}}),
                ("client", {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": audio}}}),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio}}]
                            }
                        }
                    },
                ),
                ("server", {"serverContent": {"outputTranscription": {"text": "Let me look"}}}),
                (
                    "server",
                    {
                        "toolCall": {
                            "functionCalls": [{"id": "fc-slow", "name": "long_lookup", "args": {"q": "x"}}]
                        }
                    },
                ),
                ("client", {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": audio}}}),
                ("server", {"toolCallCancellation": {"ids": ["fc-slow"]}}),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio}}]
                            }
                        }
                    },
                ),
                ("server", {"serverContent": {"interrupted": True}}),
                ("server", {"serverContent": {"turnComplete": True}}),
                ("server", {"goAway": {"timeLeft": "10s"}}),
            ]
        ),
    )
    write(
        "google-live",
        "transcripts_code_grounding_two_turns.jsonl",
        jsonl(
            [
                (
                    "client",
                    {
                        "setup": {
                            "model": "models/gemini-2.5-flash-native-audio",
                            "inputAudioTranscription": {},
                            "outputAudioTranscription": {},
                        }
                    },
                ),
                ("server", {"setupComplete": {}}),
                ("server", {"serverContent": {"inputTranscription": {"text": "What is"}}}),
                (
                    "server",
                    {
                        "serverContent": {
                            "inputTranscription": {"text": " two to the tenth?", "finished": True}
                        }
                    },
                ),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"executableCode": {"language": "PYTHON", "code": "print(2**10)"}}]
                            }
                        }
                    },
                ),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [
                                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}}
                                ]
                            }
                        }
                    },
                ),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio}}]
                            },
                            "outputTranscription": {"text": "It is 1024."},
                        }
                    },
                ),
                (
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"fileData": {"fileUri": "gs://b/x.png", "mimeType": "image/png"}}]
                            }
                        }
                    },
                ),
                ("server", {"serverContent": {"groundingMetadata": {"webSearchQueries": ["2^10"]}}}),
                ("server", {"serverContent": {"generationComplete": True}}),
                (
                    "server",
                    {
                        "serverContent": {"turnComplete": True},
                        "usageMetadata": {
                            "promptTokenCount": 10,
                            "responseTokenCount": 5,
                            "totalTokenCount": 15,
                        },
                    },
                ),
                (
                    "client",
                    {
                        "client_content": {
                            "turns": [{"role": "user", "parts": [{"text": "Thanks!"}]}],
                            "turnComplete": True,
                        }
                    },
                ),
                ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "You're welcome."}]}}}),
                (
                    "server",
                    {
                        "serverContent": {"turnComplete": True, "turnCompleteReason": "NEED_MORE_INPUT"},
                        "usageMetadata": {
                            "promptTokenCount": 20,
                            "responseTokenCount": 4,
                            "totalTokenCount": 24,
                        },
                    },
                ),
            ]
        ),
    )
    write(
        "google-live",
        "cut_mid_turn.jsonl",
        jsonl(
            [
                ("client", SETUP),
                ("server", {"setupComplete": {}}),
                ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "The answer is"}]}}}),
            ]
        ),
    )


# ---------------------------------------------------------------- openai-realtime


def rt_session(model: str = "gpt-realtime") -> tuple[str, dict[str, Any]]:
    """A GA session.created event."""
    return (
        "server",
        {
            "type": "session.created",
            "event_id": "event_s1",
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_maas1",
                "model": model,
                "output_modalities": ["text"],
            },
        },
    )


def realtime() -> None:
    """OpenAI Realtime recordings."""
    resp = "resp_maas1"
    base = {"response_id": resp}
    write(
        "openai-realtime",
        "ga_text_then_parallel_calls.jsonl",
        jsonl(
            [
                rt_session(),
                (
                    "client",
                    {
                        "type": "session.update",
                        "session": {
                            "type": "realtime",
                            "tools": [{"type": "function", "name": "get_weather"}],
                        },
                    },
                ),
                (
                    "client",
                    {
                        "type": "conversation.item.create",
                        "item": {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": "Paris and Oslo?"}],
                        },
                    },
                ),
                ("client", {"type": "response.create"}),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "e1",
                        "response": {
                            "object": "realtime.response",
                            "id": resp,
                            "status": "in_progress",
                            "status_details": None,
                            "output": [],
                            "usage": None,
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "e2",
                        **base,
                        "output_index": 0,
                        "item": {
                            "id": "item_m",
                            "type": "message",
                            "status": "in_progress",
                            "role": "assistant",
                            "content": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.added",
                        "event_id": "e3",
                        **base,
                        "item_id": "item_m",
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "text", "text": ""},
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_text.delta",
                        "event_id": "e4",
                        **base,
                        "item_id": "item_m",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": "Checking ",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_text.delta",
                        "event_id": "e5",
                        **base,
                        "item_id": "item_m",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": "both. ✓",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_text.done",
                        "event_id": "e6",
                        **base,
                        "item_id": "item_m",
                        "output_index": 0,
                        "content_index": 0,
                        "text": "Checking both. ✓",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.done",
                        "event_id": "e7",
                        **base,
                        "item_id": "item_m",
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "text", "text": "Checking both. ✓"},
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "e8",
                        **base,
                        "output_index": 0,
                        "item": {
                            "id": "item_m",
                            "type": "message",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "Checking both. ✓"}],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "e9",
                        **base,
                        "output_index": 1,
                        "item": {
                            "id": "item_f1",
                            "type": "function_call",
                            "status": "in_progress",
                            "name": "get_weather",
                            "call_id": "call_A",
                            "arguments": "",
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "e10",
                        **base,
                        "output_index": 2,
                        "item": {
                            "id": "item_f2",
                            "type": "function_call",
                            "status": "in_progress",
                            "name": "get_weather",
                            "call_id": "call_B",
                            "arguments": "",
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.delta",
                        "event_id": "e11",
                        **base,
                        "item_id": "item_f1",
                        "output_index": 1,
                        "call_id": "call_A",
                        "delta": '{"city":',
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.delta",
                        "event_id": "e12",
                        **base,
                        "item_id": "item_f2",
                        "output_index": 2,
                        "call_id": "call_B",
                        "delta": '{"city":"Oslo"}',
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.delta",
                        "event_id": "e13",
                        **base,
                        "item_id": "item_f1",
                        "output_index": 1,
                        "call_id": "call_A",
                        "delta": '"Paris"}',
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.done",
                        "event_id": "e14",
                        **base,
                        "item_id": "item_f1",
                        "output_index": 1,
                        "call_id": "call_A",
                        "name": "get_weather",
                        "arguments": '{"city":"Paris"}',
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.done",
                        "event_id": "e15",
                        **base,
                        "item_id": "item_f2",
                        "output_index": 2,
                        "call_id": "call_B",
                        "name": "get_weather",
                        "arguments": '{"city":"Oslo"}',
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "e16",
                        **base,
                        "output_index": 1,
                        "item": {
                            "id": "item_f1",
                            "type": "function_call",
                            "status": "completed",
                            "name": "get_weather",
                            "call_id": "call_A",
                            "arguments": '{"city":"Paris"}',
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "e17",
                        **base,
                        "output_index": 2,
                        "item": {
                            "id": "item_f2",
                            "type": "function_call",
                            "status": "completed",
                            "name": "get_weather",
                            "call_id": "call_B",
                            "arguments": '{"city":"Oslo"}',
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.done",
                        "event_id": "e18",
                        "response": {
                            "object": "realtime.response",
                            "id": resp,
                            "status": "completed",
                            "status_details": None,
                            "output": [
                                {
                                    "id": "item_m",
                                    "type": "message",
                                    "status": "completed",
                                    "role": "assistant",
                                    "content": [{"type": "output_text", "text": "Checking both. ✓"}],
                                },
                                {
                                    "id": "item_f1",
                                    "type": "function_call",
                                    "status": "completed",
                                    "name": "get_weather",
                                    "call_id": "call_A",
                                    "arguments": '{"city":"Paris"}',
                                },
                                {
                                    "id": "item_f2",
                                    "type": "function_call",
                                    "status": "completed",
                                    "name": "get_weather",
                                    "call_id": "call_B",
                                    "arguments": '{"city":"Oslo"}',
                                },
                            ],
                            "usage": {
                                "total_tokens": 90,
                                "input_tokens": 60,
                                "output_tokens": 30,
                                "input_token_details": {"cached_tokens": 32},
                            },
                        },
                    },
                ),
                (
                    "client",
                    {
                        "type": "conversation.item.create",
                        "item": {"type": "function_call_output", "call_id": "call_A", "output": "18C"},
                    },
                ),
                (
                    "client",
                    {
                        "type": "conversation.item.create",
                        "item": {"type": "function_call_output", "call_id": "call_B", "output": "9C"},
                    },
                ),
                ("client", {"type": "response.create"}),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "e19",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_maas2",
                            "status": "in_progress",
                            "output": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "e20",
                        "response_id": "resp_maas2",
                        "output_index": 0,
                        "item": {
                            "id": "item_m2",
                            "type": "message",
                            "status": "in_progress",
                            "role": "assistant",
                            "content": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.added",
                        "event_id": "e21",
                        "response_id": "resp_maas2",
                        "item_id": "item_m2",
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "text", "text": ""},
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_text.delta",
                        "event_id": "e22",
                        "response_id": "resp_maas2",
                        "item_id": "item_m2",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": "Paris 18C, Oslo 9C.",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.done",
                        "event_id": "e23",
                        "response_id": "resp_maas2",
                        "item_id": "item_m2",
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "text", "text": "Paris 18C, Oslo 9C."},
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "e24",
                        "response_id": "resp_maas2",
                        "output_index": 0,
                        "item": {
                            "id": "item_m2",
                            "type": "message",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "Paris 18C, Oslo 9C."}],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.done",
                        "event_id": "e25",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_maas2",
                            "status": "completed",
                            "output": [
                                {
                                    "id": "item_m2",
                                    "type": "message",
                                    "status": "completed",
                                    "role": "assistant",
                                    "content": [{"type": "output_text", "text": "Paris 18C, Oslo 9C."}],
                                }
                            ],
                            "usage": {
                                "total_tokens": 120,
                                "input_tokens": 110,
                                "output_tokens": 10,
                                "input_token_details": {"cached_tokens": 64},
                            },
                        },
                    },
                ),
            ]
        ),
    )
    b = {"response_id": "resp_beta", "item_id": "item_b", "output_index": 0, "content_index": 0}
    write(
        "openai-realtime",
        "beta_event_names_audio.jsonl",
        jsonl(
            [
                (
                    "server",
                    {
                        "type": "session.created",
                        "event_id": "s0",
                        "session": {
                            "object": "realtime.session",
                            "id": "sess_beta",
                            "model": "gpt-4o-realtime-preview",
                            "modalities": ["text", "audio"],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "b1",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_beta",
                            "status": "in_progress",
                            "output": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "b2",
                        "response_id": "resp_beta",
                        "output_index": 0,
                        "item": {
                            "id": "item_b",
                            "object": "realtime.item",
                            "type": "message",
                            "status": "in_progress",
                            "role": "assistant",
                            "content": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.added",
                        "event_id": "b3",
                        **b,
                        "part": {"type": "audio", "transcript": ""},
                    },
                ),
                (
                    "server",
                    {"type": "response.audio_transcript.delta", "event_id": "b4", **b, "delta": "Hi "},
                ),
                ("server", {"type": "response.audio.delta", "event_id": "b5", **b, "delta": "AAAA"}),
                (
                    "server",
                    {"type": "response.audio_transcript.delta", "event_id": "b6", **b, "delta": "there."},
                ),
                ("server", {"type": "response.audio.delta", "event_id": "b7", **b, "delta": "//8A"}),
                ("server", {"type": "response.audio.done", "event_id": "b8", **b}),
                (
                    "server",
                    {
                        "type": "response.audio_transcript.done",
                        "event_id": "b9",
                        **b,
                        "transcript": "Hi there.",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.done",
                        "event_id": "b10",
                        **b,
                        "part": {"type": "audio", "transcript": "Hi there."},
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "b11",
                        "response_id": "resp_beta",
                        "output_index": 0,
                        "item": {
                            "id": "item_b",
                            "type": "message",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "audio", "transcript": "Hi there."}],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "rate_limits.updated",
                        "event_id": "b12",
                        "rate_limits": [
                            {"name": "tokens", "limit": 1000, "remaining": 900, "reset_seconds": 1.0}
                        ],
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.done",
                        "event_id": "b13",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_beta",
                            "status": "completed",
                            "output": [
                                {
                                    "id": "item_b",
                                    "type": "message",
                                    "status": "completed",
                                    "role": "assistant",
                                    "content": [{"type": "audio", "transcript": "Hi there."}],
                                }
                            ],
                            "usage": {"total_tokens": 30, "input_tokens": 10, "output_tokens": 20},
                        },
                    },
                ),
            ]
        ),
    )
    c = {"response_id": "resp_c", "item_id": "item_c", "output_index": 0, "content_index": 0}
    write(
        "openai-realtime",
        "input_transcription_cancelled_error.jsonl",
        jsonl(
            [
                rt_session(),
                ("client", {"type": "input_audio_buffer.append", "audio": "AAAAAA=="}),
                (
                    "server",
                    {
                        "type": "input_audio_buffer.speech_started",
                        "event_id": "c0",
                        "audio_start_ms": 100,
                        "item_id": "item_u",
                    },
                ),
                (
                    "server",
                    {
                        "type": "input_audio_buffer.committed",
                        "event_id": "c1",
                        "previous_item_id": None,
                        "item_id": "item_u",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "c2",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_c",
                            "status": "in_progress",
                            "output": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "conversation.item.input_audio_transcription.delta",
                        "event_id": "c3",
                        "item_id": "item_u",
                        "content_index": 0,
                        "delta": "Tell me",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "c4",
                        "response_id": "resp_c",
                        "output_index": 0,
                        "item": {
                            "id": "item_c",
                            "type": "message",
                            "status": "in_progress",
                            "role": "assistant",
                            "content": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.content_part.added",
                        "event_id": "c5",
                        **c,
                        "part": {"type": "audio", "transcript": ""},
                    },
                ),
                ("server", {"type": "response.output_audio.delta", "event_id": "c6", **c, "delta": "AQID"}),
                (
                    "server",
                    {
                        "type": "response.output_audio_transcript.delta",
                        "event_id": "c7",
                        **c,
                        "delta": "Once upon",
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.done",
                        "event_id": "c8",
                        "response_id": "resp_c",
                        "output_index": 0,
                        "item": {
                            "id": "item_c",
                            "type": "message",
                            "status": "incomplete",
                            "role": "assistant",
                            "content": [{"type": "output_audio", "transcript": "Once upon"}],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.done",
                        "event_id": "c9",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_c",
                            "status": "cancelled",
                            "status_details": {"type": "cancelled", "reason": "turn_detected"},
                            "output": [
                                {
                                    "id": "item_c",
                                    "type": "message",
                                    "status": "incomplete",
                                    "role": "assistant",
                                    "content": [{"type": "output_audio", "transcript": "Once upon"}],
                                }
                            ],
                            "usage": {"total_tokens": 12, "input_tokens": 8, "output_tokens": 4},
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "conversation.item.input_audio_transcription.delta",
                        "event_id": "c10",
                        "item_id": "item_u",
                        "content_index": 0,
                        "delta": " a story.",
                    },
                ),
                (
                    "server",
                    {
                        "type": "conversation.item.input_audio_transcription.completed",
                        "event_id": "c11",
                        "item_id": "item_u",
                        "content_index": 0,
                        "transcript": "Tell me a story.",
                        "usage": {"type": "duration", "seconds": 2},
                    },
                ),
                (
                    "client",
                    {
                        "type": "conversation.item.truncate",
                        "item_id": "item_c",
                        "content_index": 0,
                        "audio_end_ms": 300,
                    },
                ),
                (
                    "server",
                    {
                        "type": "error",
                        "event_id": "c12",
                        "error": {
                            "type": "invalid_request_error",
                            "code": "item_truncate_invalid",
                            "message": "Audio content already shorter",
                            "param": None,
                            "event_id": None,
                        },
                    },
                ),
            ]
        ),
    )
    write(
        "openai-realtime",
        "done_only_items_incomplete.jsonl",
        jsonl(
            [
                rt_session(),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "d1",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_d",
                            "status": "in_progress",
                            "output": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.done",
                        "event_id": "d2",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_d",
                            "status": "incomplete",
                            "status_details": {"type": "incomplete", "reason": "max_output_tokens"},
                            "output": [
                                {
                                    "id": "item_d1",
                                    "type": "message",
                                    "status": "incomplete",
                                    "role": "assistant",
                                    "content": [{"type": "output_text", "text": "Only in the final event"}],
                                },
                                {
                                    "id": "item_d2",
                                    "type": "mcp_call",
                                    "server_label": "docs",
                                    "name": "search",
                                    "arguments": "{}",
                                    "output": "none",
                                },
                            ],
                            "usage": {"total_tokens": 50, "input_tokens": 10, "output_tokens": 40},
                        },
                    },
                ),
            ]
        ),
    )
    write(
        "openai-realtime",
        "cut_mid_arguments.jsonl",
        jsonl(
            [
                rt_session(),
                (
                    "server",
                    {
                        "type": "response.created",
                        "event_id": "x1",
                        "response": {
                            "object": "realtime.response",
                            "id": "resp_x",
                            "status": "in_progress",
                            "output": [],
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.output_item.added",
                        "event_id": "x2",
                        "response_id": "resp_x",
                        "output_index": 0,
                        "item": {
                            "id": "item_x",
                            "type": "function_call",
                            "status": "in_progress",
                            "name": "lookup",
                            "call_id": "call_x",
                            "arguments": "",
                        },
                    },
                ),
                (
                    "server",
                    {
                        "type": "response.function_call_arguments.delta",
                        "event_id": "x3",
                        "response_id": "resp_x",
                        "item_id": "item_x",
                        "output_index": 0,
                        "call_id": "call_x",
                        "delta": '{"q": "par',
                    },
                ),
            ]
        ),
    )


if __name__ == "__main__":
    interactions()
    live()
    realtime()
