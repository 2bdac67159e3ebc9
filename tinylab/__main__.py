from tinylab.cli import main

raise SystemExit(main())
