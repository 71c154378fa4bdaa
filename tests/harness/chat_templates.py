"""Chat templates for the tests, written here: one in the Hermes style (tools listed as JSON in the system
turn, calls in <tool_call>, results in <tool_response>), and one that, like the generic function-calling
format issue 25 met, renders a tool message without its content."""

from __future__ import annotations

from agentrel.harness.serving.chat_template import ChatTemplate

HERMES_STYLE = ChatTemplate(
    """
{%- if tools %}<|im_start|>system
{{ messages[0].content if messages[0].role == 'system' else 'You are a helpful assistant.' }}

# Tools
<tools>
{% for t in tools %}{{ t | tojson }}
{% endfor %}</tools>
To call a tool, write <tool_call>{"name": NAME, "arguments": {...}}</tool_call>.<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'system' and tools %}
{%- elif m.role == 'tool' %}<|im_start|>user
<tool_response>
{{ m.content }}
</tool_response><|im_end|>
{% elif m.role == 'assistant' %}<|im_start|>assistant
{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}""",
    eos_token="<|im_end|>",
)

BLIND_TO_TOOL_RESULTS = ChatTemplate(
    """
{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.role != 'tool' %}{{ m.content }}{% endif %}<|im_end|>
{% endfor %}
{%- if tools %}functions: {% for t in tools %}{{ t.function.name }} {% endfor %}{% endif %}
<|im_start|>assistant
"""
)
