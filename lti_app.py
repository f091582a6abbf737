"""BERT Explorer with its LTI 1.3 endpoints (/lti/login, /lti/launch, /lti/jwks, /lti/deep-link)
served by the same server: `streamlit run lti_app.py` (docs/DEPLOY.md). `streamlit run
streamlit_app.py` is the same app without them."""

import streamlit as st

from app.lti.routes import routes

app = st.App("streamlit_app.py", routes=routes())
