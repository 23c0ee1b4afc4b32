"""Facts, and two queries for each, for the semantic part of ``bench_memory.py``.

Each row: the fact, a keyword query (sharing rare words with the fact, as a user who
remembers the name would ask) and a paraphrase (sharing no content word with it, as a user
who remembers only the idea would ask). Written for the benchmark; no answer is a near copy
of another.
"""

from __future__ import annotations

FACTS: tuple[tuple[str, str, str], ...] = (
    (
        "The staging database listens on port 6543.",
        "staging database port",
        "Which number do I connect to for the pre-production DB?",
    ),
    (
        "Alice is allergic to peanuts.",
        "peanuts allergy",
        "Which nuts make her sick?",
    ),
    (
        "Alice's dog is called Pixel.",
        "dog Pixel",
        "What is the name of her pet?",
    ),
    (
        "The team ships a release every second Thursday.",
        "release Thursday",
        "How often do we put out a new version?",
    ),
    (
        "Alice learns Portuguese on weekends.",
        "Portuguese weekends",
        "Which language is she studying?",
    ),
    (
        "The nightly export job writes to the bucket s3://ops-exports.",
        "nightly export bucket",
        "Where do the overnight dumps end up?",
    ),
    (
        "Alice prefers answers without emojis.",
        "emojis answers",
        "Should replies contain little pictures?",
    ),
    (
        "The billing service is written in Go.",
        "billing service Go",
        "What programming language powers invoicing?",
    ),
    (
        "Alice works from Lisbon.",
        "Lisbon",
        "In which city is she based?",
    ),
    (
        "Deploys are frozen during the last week of December.",
        "deploys frozen December",
        "When can we not push changes at year end?",
    ),
    (
        "The on-call phone number is kept in the vault under ops/oncall.",
        "on-call phone vault",
        "Where is the emergency contact stored?",
    ),
    (
        "Alice reviews pull requests in the morning.",
        "reviews pull requests morning",
        "At what time of day does she look at code changes?",
    ),
    (
        "The search cluster has three Elasticsearch nodes.",
        "Elasticsearch nodes",
        "How many machines serve full-text queries?",
    ),
    (
        "Alice's manager is Priya.",
        "manager Priya",
        "Who is her boss?",
    ),
    (
        "The mobile app supports Android 12 and later.",
        "mobile app Android",
        "What is the oldest phone OS we still handle?",
    ),
    (
        "Customer data must stay in the EU region.",
        "customer data EU region",
        "Can user records be hosted in America?",
    ),
    (
        "Alice drinks green tea, never coffee.",
        "green tea coffee",
        "What hot beverage does she like?",
    ),
    (
        "The CI pipeline takes about twelve minutes.",
        "CI pipeline minutes",
        "How long do automated builds run?",
    ),
    (
        "Backups are kept for ninety days.",
        "backups ninety days",
        "What is our retention for snapshots?",
    ),
    (
        "Alice runs a marathon every spring.",
        "marathon spring",
        "Which long-distance race does she do each year?",
    ),
    (
        "The payments API rate limit is 100 requests per second.",
        "payments API rate limit",
        "How many calls per second can the checkout endpoint take?",
    ),
    (
        "Alice's laptop is a ThinkPad running Fedora.",
        "ThinkPad Fedora laptop",
        "Which computer and Linux distribution does she use?",
    ),
    (
        "The design system lives in the Figma file Atlas.",
        "Figma Atlas design system",
        "Where are the UI components drawn?",
    ),
    (
        "Alice wants weekly status reports on Friday afternoons.",
        "weekly status reports Friday",
        "When should the progress summary reach her?",
    ),
)
