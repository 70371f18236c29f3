"""The online service: the app factory (app.py) over api/ (HTTP and UI), queue/ (where a job waits and
who runs it), store/ (the database and the content store) and trackers/ (Bugzilla, GitHub, email);
schemas.py holds the documents the API speaks. What a diagnosis is comes from diagnosis/."""
