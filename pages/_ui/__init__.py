"""Small Streamlit helpers shared by the pages (UI only; no computation).

Pages import this package as ``from pages import _ui as ui``; every helper is
re-exported here from the module that holds it:

- :mod:`pages._ui.nav`: the page list (``PAGES``), ``st.navigation`` and the
  hand-over of a page run straight from the ``pages/`` folder;
- :mod:`pages._ui.session`: this session's dataset or registered source, its
  cursor, the dataset picker and the mapping checks;
- :mod:`pages._ui.url`: page settings in the shareable URL, operator caps;
- :mod:`pages._ui.widgets`: error boxes, downloads, dead ends, verdict badges,
  cancellation, the progress box of several methods;
- :mod:`pages._ui.reporting`: who is acting, the session's report and
  :func:`add_to_report`;
- :mod:`pages._ui.cache`: the shared result and figure caches;
- :mod:`pages._ui.state`: flash messages and the last submitted settings, under the
  session keys of :mod:`pages._ui.keys` (``ui.keys.X``).

Text a visitor controls (names, link parameters, file and column names, cell values, and
ulr's sentences that echo them) goes into every page message through ``ui.shown`` (a value,
cut and escaped) or ``ui.literal`` (a whole sentence, escaped), from :mod:`ulr.text`.

The server's own setup (sockets, garbage collection) is :mod:`ulr.server`, called by app.py.
"""

from pages._ui import keys  # noqa: F401
from pages._ui.cache import (_BY_DATASET, _BY_DATASET_CAP, CACHE_TTL, cache_data,  # noqa: F401
                             cached_only, figure, forget)
from pages._ui.nav import (_APP_SEEN, _in_folder_mode_run, APP, PAGES, ROOT,  # noqa: F401
                           ensure_app_run, navigation)
from pages._ui.reporting import (BROWSER_COOKIE, REPORT_KEY, _browser_identity,  # noqa: F401
                                 _report_to_add_to, account_box, add_to_report,
                                 auth_configured, current_report_id, identity,
                                 presentation_toggle, require_sign_in, set_current_report,
                                 sign_in_button, signed_in)
from pages._ui.session import (DATASET_KEY, NEEDS_ROWS, OPE_SAMPLE, SOURCE_KEY,  # noqa: F401
                               current_log, current_name, current_source, cursor, dataset_names,
                               dataset_picker, mapping_stops, mapping_warnings, needs_rows, page_methods,
                               set_current, set_current_source, source_names, wait_notice)
from pages._ui.state import flash, show_flash, submitted  # noqa: F401
from pages._ui.url import (LIMITS, limit, set_url_params, url_index, url_number,  # noqa: F401
                           url_options, url_param)
from ulr.text import clip, literal, shown  # noqa: F401 - visitor text shown as text
from pages._ui.widgets import (VERDICT_COLORS, VERDICT_ICONS, cancellable,  # noqa: F401
                               dataframe, dead_end, download_csv, run_methods, show_verdict,
                               user_errors)
