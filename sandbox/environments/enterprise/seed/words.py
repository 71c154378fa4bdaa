"""Vocabulary of the generated enterprise: names, sites, topics."""

FIRST = (
    "Alex Ana Ben Carla Chen Dana Devi Elif Emma Farid Grace Hana Ivan Jonas Kai Lara Leo Maya Mia "
    "Nora Omar Priya Quinn Rafael Sara Sofia Tariq Uma Victor Wei Yara Zoe Noah Liam Ava Ethan "
    "Ines Jamal"
).split()
LAST = (
    "Abbott Baker Chen Diaz Evans Fischer Garcia Haddad Ito Jensen Kowalski Lopez Moreau Nakamura "
    "Novak Okafor Patel Quist Rossi Schmidt Silva Tanaka Urban Varga Weber Xu Yilmaz Zimmer Brooks "
    "Murphy"
).split()
DEPARTMENTS = (
    "IT Operations",
    "Service Desk",
    "Network",
    "Security",
    "Finance",
    "HR",
    "Sales",
    "Support",
    "Engineering",
    "Facilities",
)
COMPANY_WORDS = (
    "Northwind Contoso Fabrikam Globex Initech Umbrella Stark Wayne Acme Hooli Vandelay Tyrell "
    "Cyberdyne Soylent Wonka Oscorp Massive Dynamic Aperture Gringotts Monarch Pied Piper Blue Sun "
    "Vertex Summit Harbor Cascade Pioneer Evergreen Atlas Beacon"
).split()
COMPANY_SUFFIX = (
    "Ltd",
    "Inc",
    "GmbH",
    "Group",
    "Holdings",
    "Labs",
    "Systems",
    "Logistics",
    "Health",
    "Retail",
)
INDUSTRIES = ("Retail", "Healthcare", "Finance", "Manufacturing", "Logistics", "Public Sector", "Energy")
SITES = ("Denver", "Austin", "Boston", "Chicago", "Dublin", "Berlin", "Singapore", "Toronto")
CI_CLASSES = ("server", "database", "application", "network_device", "laptop", "storage", "license")
INC_TOPICS = (
    "VPN connection drops",
    "Email not syncing",
    "Printer offline",
    "Password reset",
    "Disk space low",
    "Application timeout",
    "Slow network",
    "Login failure",
    "Certificate expiring",
    "Backup job failed",
    "High CPU on host",
    "Payroll report error",
    "Wi-Fi unstable",
    "Laptop will not boot",
)
CASE_TOPICS = (
    "Billing question",
    "Product defect",
    "Installation help",
    "License activation",
    "Data export",
    "Feature request",
    "Outage report",
    "Refund request",
    "Portal access",
    "Shipping delay",
)
