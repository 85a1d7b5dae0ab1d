"""Clause taxonomy: the 41 CUAD v1 categories plus ``other``.

Source: CUAD v1 (The Atticus Project, CC BY 4.0), ``CUAD_v1_README.txt`` and the column
headers of ``master_clauses.csv``. The enum *value* is a stable snake_case identifier used in
tool schemas, database rows and reports; :data:`CUAD_LABELS` maps it to CUAD's own column name.
"""

from __future__ import annotations

from enum import Enum


class ClauseType(str, Enum):
    """A CUAD clause category (41) or ``other``."""

    document_name = "document_name"
    parties = "parties"
    agreement_date = "agreement_date"
    effective_date = "effective_date"
    expiration_date = "expiration_date"
    renewal_term = "renewal_term"
    notice_period_to_terminate_renewal = "notice_period_to_terminate_renewal"
    governing_law = "governing_law"
    most_favored_nation = "most_favored_nation"
    competitive_restriction_exception = "competitive_restriction_exception"
    non_compete = "non_compete"
    exclusivity = "exclusivity"
    no_solicit_of_customers = "no_solicit_of_customers"
    no_solicit_of_employees = "no_solicit_of_employees"
    non_disparagement = "non_disparagement"
    termination_for_convenience = "termination_for_convenience"
    rofr_rofo_rofn = "rofr_rofo_rofn"
    change_of_control = "change_of_control"
    anti_assignment = "anti_assignment"
    revenue_profit_sharing = "revenue_profit_sharing"
    price_restrictions = "price_restrictions"
    minimum_commitment = "minimum_commitment"
    volume_restriction = "volume_restriction"
    ip_ownership_assignment = "ip_ownership_assignment"
    joint_ip_ownership = "joint_ip_ownership"
    license_grant = "license_grant"
    non_transferable_license = "non_transferable_license"
    affiliate_license_licensor = "affiliate_license_licensor"
    affiliate_license_licensee = "affiliate_license_licensee"
    unlimited_all_you_can_eat_license = "unlimited_all_you_can_eat_license"
    irrevocable_or_perpetual_license = "irrevocable_or_perpetual_license"
    source_code_escrow = "source_code_escrow"
    post_termination_services = "post_termination_services"
    audit_rights = "audit_rights"
    uncapped_liability = "uncapped_liability"
    cap_on_liability = "cap_on_liability"
    liquidated_damages = "liquidated_damages"
    warranty_duration = "warranty_duration"
    insurance = "insurance"
    covenant_not_to_sue = "covenant_not_to_sue"
    third_party_beneficiary = "third_party_beneficiary"
    other = "other"


#: CUAD column name for each category (``master_clauses.csv`` header spelling).
CUAD_LABELS: dict[ClauseType, str] = {
    ClauseType.document_name: "Document Name",
    ClauseType.parties: "Parties",
    ClauseType.agreement_date: "Agreement Date",
    ClauseType.effective_date: "Effective Date",
    ClauseType.expiration_date: "Expiration Date",
    ClauseType.renewal_term: "Renewal Term",
    ClauseType.notice_period_to_terminate_renewal: "Notice Period To Terminate Renewal",
    ClauseType.governing_law: "Governing Law",
    ClauseType.most_favored_nation: "Most Favored Nation",
    ClauseType.competitive_restriction_exception: "Competitive Restriction Exception",
    ClauseType.non_compete: "Non-Compete",
    ClauseType.exclusivity: "Exclusivity",
    ClauseType.no_solicit_of_customers: "No-Solicit Of Customers",
    ClauseType.no_solicit_of_employees: "No-Solicit Of Employees",
    ClauseType.non_disparagement: "Non-Disparagement",
    ClauseType.termination_for_convenience: "Termination For Convenience",
    ClauseType.rofr_rofo_rofn: "Rofr/Rofo/Rofn",
    ClauseType.change_of_control: "Change Of Control",
    ClauseType.anti_assignment: "Anti-Assignment",
    ClauseType.revenue_profit_sharing: "Revenue/Profit Sharing",
    ClauseType.price_restrictions: "Price Restrictions",
    ClauseType.minimum_commitment: "Minimum Commitment",
    ClauseType.volume_restriction: "Volume Restriction",
    ClauseType.ip_ownership_assignment: "Ip Ownership Assignment",
    ClauseType.joint_ip_ownership: "Joint Ip Ownership",
    ClauseType.license_grant: "License Grant",
    ClauseType.non_transferable_license: "Non-Transferable License",
    ClauseType.affiliate_license_licensor: "Affiliate License-Licensor",
    ClauseType.affiliate_license_licensee: "Affiliate License-Licensee",
    ClauseType.unlimited_all_you_can_eat_license: "Unlimited/All-You-Can-Eat-License",
    ClauseType.irrevocable_or_perpetual_license: "Irrevocable Or Perpetual License",
    ClauseType.source_code_escrow: "Source Code Escrow",
    ClauseType.post_termination_services: "Post-Termination Services",
    ClauseType.audit_rights: "Audit Rights",
    ClauseType.uncapped_liability: "Uncapped Liability",
    ClauseType.cap_on_liability: "Cap On Liability",
    ClauseType.liquidated_damages: "Liquidated Damages",
    ClauseType.warranty_duration: "Warranty Duration",
    ClauseType.insurance: "Insurance",
    ClauseType.covenant_not_to_sue: "Covenant Not To Sue",
    ClauseType.third_party_beneficiary: "Third Party Beneficiary",
    ClauseType.other: "Other",
}

#: Categories whose presence or absence carries the most legal risk (used for risk defaults).
HIGH_RISK: frozenset[ClauseType] = frozenset(
    {
        ClauseType.uncapped_liability,
        ClauseType.cap_on_liability,
        ClauseType.liquidated_damages,
        ClauseType.non_compete,
        ClauseType.exclusivity,
        ClauseType.change_of_control,
        ClauseType.termination_for_convenience,
        ClauseType.most_favored_nation,
        ClauseType.ip_ownership_assignment,
        ClauseType.covenant_not_to_sue,
    }
)


def is_contract_clause(value: str) -> bool:
    """True for a CUAD contract category (:class:`ClauseType`), False for anything else (a filing topic)."""
    try:
        ClauseType(value)
    except ValueError:
        return False
    return True


def label(clause_type: ClauseType | str) -> str:
    """Return the CUAD display label for ``clause_type`` (e.g. ``"Cap On Liability"``)."""
    return CUAD_LABELS[ClauseType(clause_type)]
