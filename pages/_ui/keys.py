"""Every key this app keeps in ``st.session_state``, named once (issue #38).

A page reads and writes the session's state only through these names (a widget's own
``key=`` stays beside the widget unless code elsewhere reads it). tests/test_pages_ui.py
checks that no key string is spelled in two files of pages/.
"""

# the app-wide selection (pages._ui.session); the values are also the URL's parameter names
DATASET = "dataset"
SOURCE = "source"
CURSOR = "_ulr_cursor"            # this session's reader connection on the store

# messages that survive a rerun (pages._ui.state.flash): one slot per place that shows them
FLASH = "_ulr_flash"              # beside the dataset picker: selection fell back
SOURCE_FLASH = "_src_msg"         # Data page: a source was registered, refreshed or removed
REPORT_FLASH = "_rep_flash"       # Report page: an action was refused

# the last settings a form completed with (pages._ui.state.submitted): prefix + form's key
SUBMITTED = "_ulr_submitted_"

# navigation and stopping (pages._ui.nav, pages._ui.widgets)
APP_SEEN = "_ulr_app_seen"
ALIVE = "_ulr_alive"              # looked up only: a point where Streamlit may stop a run

# who is acting and their report (pages._ui.reporting)
REPORT = "report_id"
IDENTITY = "_ulr_identity"
COOKIE_TO_SET = "_ulr_browser_token"

# Data page (pages._data.upload, pages/data.py)
UPLOAD_COPY = "_upload_copy"
UPLOAD_PEEK = "_upload_peek"
MAPPING_CHECK = "_mapping_check"  # the mapping checked on the file before Load (ulr.data.precheck)
LAST_LOAD = "_last_load"          # the last load's outcome, shown until another dataset is deleted

# Report page (pages/report.py); the last two are prefixes of per-report and per-item keys
REPORT_PICK = "rep_pick"
REPORT_NAME = "rep_name"
REPORT_NAME_FOR = "_rep_name_for"
REPORT_DELETE_SURE = "rep_del_sure"
REPORT_PRIVATE = "rep_private_"
REPORT_ITEM = "rep_"

# Bandit lab (pages/bandit_lab.py, pages/_bandit): ulr.bandits.run.LabRun keeps the run
# under this prefix (bl_lab, bl_status, ...); the replay's result has a key of its own
BANDIT_RUN = "bl_"
BANDIT_REPLAY = "bl_replay"

# Log audit (pages/audit.py): which log was audited, and the report built from it
AUDIT_RAN = "_audit_ran"
AUDIT_BUILT = "_audit_built"
