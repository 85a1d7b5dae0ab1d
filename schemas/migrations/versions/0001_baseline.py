"""Baseline: the tables docreview created with create_all before migrations.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 18:59:48.958098
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Idempotent (IF NOT EXISTS): also adopts a database made by the pre-migration create_all code.
    op.create_table('absences',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('absence_key', sa.String(length=64), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('clause_type', sa.String(), nullable=False),
    sa.Column('chunks', sa.JSON(), nullable=False),
    sa.Column('chunk_count', sa.Integer(), nullable=False),
    sa.Column('verdict', sa.String(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    with op.batch_alter_table('absences', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_absences_absence_key'), ['absence_key'], unique=True, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_absences_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('checks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('finding_key', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('verdict', sa.String(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('finding_key', 'name', name='uq_checks_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('checks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_checks_finding_key'), ['finding_key'], unique=False, if_not_exists=True)

    op.create_table('chunk_results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cache_key', sa.String(length=64), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('findings', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    with op.batch_alter_table('chunk_results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_chunk_results_cache_key'), ['cache_key'], unique=True, if_not_exists=True)

    op.create_table('chunks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('chunker', sa.String(), nullable=False),
    sa.Column('chunk_index', sa.Integer(), nullable=False),
    sa.Column('char_start', sa.Integer(), nullable=False),
    sa.Column('char_end', sa.Integer(), nullable=False),
    sa.Column('page_start', sa.Integer(), nullable=False),
    sa.Column('page_end', sa.Integer(), nullable=False),
    sa.Column('heading', sa.String(), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('route', sa.String(), nullable=True),
    sa.Column('route_reason', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('sha256', 'chunker', 'chunk_index', name='uq_chunks_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_chunks_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('document_drift',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=36), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('findings', sa.Integer(), nullable=False),
    sa.Column('baseline_run_id', sa.String(length=36), nullable=True),
    sa.Column('baseline_model', sa.String(), nullable=True),
    sa.Column('baseline_prompt_version', sa.String(), nullable=True),
    sa.Column('baseline_findings', sa.Integer(), nullable=True),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('added', sa.JSON(), nullable=False),
    sa.Column('removed', sa.JSON(), nullable=False),
    sa.Column('changed', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'sha256', name='uq_document_drift_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('document_drift', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_document_drift_run_id'), ['run_id'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_document_drift_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('document_flags',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('detector', sa.String(), nullable=False),
    sa.Column('kind', sa.String(), nullable=False),
    sa.Column('rule', sa.String(), nullable=False),
    sa.Column('char_start', sa.Integer(), nullable=False),
    sa.Column('char_end', sa.Integer(), nullable=False),
    sa.Column('page', sa.Integer(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('excerpt', sa.Text(), nullable=False),
    sa.Column('chunk_indices', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('sha256', 'detector', 'kind', 'rule', 'char_start', name='uq_document_flags_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('document_flags', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_document_flags_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('document_reviews',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('backend', sa.String(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('chunks', sa.Integer(), nullable=False),
    sa.Column('findings', sa.Integer(), nullable=False),
    sa.Column('reviewed_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('sha256', 'prompt_version', 'model', name='uq_document_reviews_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('document_reviews', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_document_reviews_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('documents',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('file_name', sa.String(), nullable=False),
    sa.Column('size_bytes', sa.Integer(), nullable=False),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.Column('page_flags', sa.JSON(), nullable=False),
    sa.Column('first_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_documents_sha256'), ['sha256'], unique=True, if_not_exists=True)

    op.create_table('finding_observations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=36), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('finding_key', sa.String(length=64), nullable=False),
    sa.Column('anchor', sa.String(length=64), nullable=False),
    sa.Column('clause_type', sa.String(), nullable=False),
    sa.Column('values', sa.JSON(), nullable=False),
    sa.Column('verdict', sa.String(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'finding_key', name='uq_finding_observations_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('finding_observations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_finding_observations_run_id'), ['run_id'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_finding_observations_sha256'), ['sha256'], unique=False, if_not_exists=True)

    op.create_table('findings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('finding_key', sa.String(length=64), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('backend', sa.String(), nullable=False),
    sa.Column('chunk_index', sa.Integer(), nullable=False),
    sa.Column('clause_type', sa.String(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('risk', sa.String(), nullable=False),
    sa.Column('evidence', sa.Text(), nullable=False),
    sa.Column('page', sa.Integer(), nullable=False),
    sa.Column('stated_page', sa.Integer(), nullable=False),
    sa.Column('values', sa.JSON(), nullable=False),
    sa.Column('verdict', sa.String(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_findings_clause_type'), ['clause_type'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_findings_finding_key'), ['finding_key'], unique=True, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_findings_sha256'), ['sha256'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_findings_verdict'), ['verdict'], unique=False, if_not_exists=True)

    op.create_table('llm_calls',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('chunk_index', sa.Integer(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('backend', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('request_id', sa.String(), nullable=True),
    sa.Column('stop_reason', sa.String(), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('cache_creation_input_tokens', sa.Integer(), nullable=False),
    sa.Column('cache_read_input_tokens', sa.Integer(), nullable=False),
    sa.Column('first_token_ms', sa.Float(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('error_class', sa.String(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'sha256', 'chunk_index', 'attempt', name='uq_llm_calls_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('llm_calls', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_llm_calls_run_id'), ['run_id'], unique=False, if_not_exists=True)

    op.create_table('message_batches',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('batch_key', sa.String(length=64), nullable=False),
    sa.Column('batch_id', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('custom_ids', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    with op.batch_alter_table('message_batches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_message_batches_batch_key'), ['batch_key'], unique=True, if_not_exists=True)

    op.create_table('reviewer_decisions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('target_kind', sa.String(), nullable=False),
    sa.Column('target_key', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('decision', sa.String(), nullable=False),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_key', 'seq', name='uq_reviewer_decisions_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('reviewer_decisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reviewer_decisions_target_key'), ['target_key'], unique=False, if_not_exists=True)

    op.create_table('run_metrics',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'name', name='uq_run_metrics_key'),
    if_not_exists=True,
    )
    with op.batch_alter_table('run_metrics', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_metrics_run_id'), ['run_id'], unique=False, if_not_exists=True)

    op.create_table('runs',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('source', sa.String(), nullable=False),
    sa.Column('backend', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('flow_run_id', sa.String(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('status', sa.String(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True,
    )
    op.create_table('run_documents',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(), nullable=False),
    sa.Column('source', sa.String(), nullable=False),
    sa.Column('file_name', sa.String(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=True),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('failure_kind', sa.String(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.Column('findings', sa.Integer(), nullable=False),
    sa.Column('reused', sa.Boolean(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'source', name='uq_run_documents_run_source'),
    if_not_exists=True,
    )
    with op.batch_alter_table('run_documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_documents_run_id'), ['run_id'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_run_documents_sha256'), ['sha256'], unique=False, if_not_exists=True)

    _add_columns_missing_from_older_databases()


def _add_columns_missing_from_older_databases() -> None:
    """Databases made by create_all before chunk routing existed lack ``chunks.route*``."""
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("chunks")}
    missing = [c for c in (sa.Column('route', sa.String(), nullable=True),
                           sa.Column('route_reason', sa.Text(), nullable=True)) if c.name not in columns]
    if missing:
        with op.batch_alter_table('chunks', schema=None) as batch_op:
            for column in missing:
                batch_op.add_column(column)


def downgrade() -> None:
    """Downgrade schema."""
    # ### commands auto generated by Alembic - please adjust! ###
    with op.batch_alter_table('run_documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_documents_sha256'))
        batch_op.drop_index(batch_op.f('ix_run_documents_run_id'))

    op.drop_table('run_documents')
    op.drop_table('runs')
    with op.batch_alter_table('run_metrics', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_metrics_run_id'))

    op.drop_table('run_metrics')
    with op.batch_alter_table('reviewer_decisions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reviewer_decisions_target_key'))

    op.drop_table('reviewer_decisions')
    with op.batch_alter_table('message_batches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_message_batches_batch_key'))

    op.drop_table('message_batches')
    with op.batch_alter_table('llm_calls', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_llm_calls_run_id'))

    op.drop_table('llm_calls')
    with op.batch_alter_table('findings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_findings_verdict'))
        batch_op.drop_index(batch_op.f('ix_findings_sha256'))
        batch_op.drop_index(batch_op.f('ix_findings_finding_key'))
        batch_op.drop_index(batch_op.f('ix_findings_clause_type'))

    op.drop_table('findings')
    with op.batch_alter_table('finding_observations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_finding_observations_sha256'))
        batch_op.drop_index(batch_op.f('ix_finding_observations_run_id'))

    op.drop_table('finding_observations')
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_documents_sha256'))

    op.drop_table('documents')
    with op.batch_alter_table('document_reviews', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_document_reviews_sha256'))

    op.drop_table('document_reviews')
    with op.batch_alter_table('document_flags', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_document_flags_sha256'))

    op.drop_table('document_flags')
    with op.batch_alter_table('document_drift', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_document_drift_sha256'))
        batch_op.drop_index(batch_op.f('ix_document_drift_run_id'))

    op.drop_table('document_drift')
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_chunks_sha256'))

    op.drop_table('chunks')
    with op.batch_alter_table('chunk_results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_chunk_results_cache_key'))

    op.drop_table('chunk_results')
    with op.batch_alter_table('checks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_checks_finding_key'))

    op.drop_table('checks')
    with op.batch_alter_table('absences', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_absences_sha256'))
        batch_op.drop_index(batch_op.f('ix_absences_absence_key'))

    op.drop_table('absences')
    # ### end Alembic commands ###
