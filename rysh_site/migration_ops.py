"""One migration operation for the models that moved out of the old `automations` and `budgets`
apps into catalogue, reviews, runs and schedules (the apps split).

The models keep their tables (their Meta.db_table names them). On a database made before the
split the tables and their rows are adopted as they are — only Django's migration state learns
of them; on a fresh database the same operations create them. A database that is part way (some
tables there, or an older schema) is refused with what to do, never half-migrated.
"""

from __future__ import annotations

from django.db import migrations
from django.db.migrations.recorder import MigrationRecorder

LAST_LEGACY_MIGRATION = {"automations": "0005_schedules", "budgets": "0001_initial"}


class AdoptTables(migrations.SeparateDatabaseAndState):
    def __init__(self, *, tables: list[str], operations: list):
        self.tables = tables
        super().__init__(state_operations=operations, database_operations=operations)

    def deconstruct(self):
        return self.__class__.__qualname__, [], {"tables": self.tables, "operations": self.state_operations}

    def describe(self) -> str:
        return f"Adopt or create {', '.join(self.tables)}"

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        connection = schema_editor.connection
        existing = set(connection.introspection.table_names())
        present = [t for t in self.tables if t in existing]
        if not present:
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        missing = [t for t in self.tables if t not in existing]
        applied = MigrationRecorder(connection).applied_migrations()
        legacy = {t.split("_", 1)[0] for t in present}
        behind = [
            f"{app} {LAST_LEGACY_MIGRATION[app]}"
            for app in sorted(legacy)
            if (app, LAST_LEGACY_MIGRATION[app]) not in applied
        ]
        if missing or behind:
            raise RuntimeError(
                f"{app_label}: this database was made before the apps split but is not at its "
                f"last migration (tables missing: {', '.join(missing) or 'none'}; migrations "
                f"missing: {', '.join(behind) or 'none'}). Migrate it with the release before the "
                "split (git 6c303b9) first, then with this one."
            )
        # adopted: the tables and their rows are already what the state now describes
