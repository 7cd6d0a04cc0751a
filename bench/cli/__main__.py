from memplace.bench.cli.main import main

main()
